#!/usr/bin/env node
// @ts-check
// Packs the npm packages as they are published, napi-rs's per-platform layout:
//
// - `user-questions`: the JS layer, the generated loader and the types, no binary; every
//   platform package of `npm/` is an optional dependency at the same version, so npm
//   installs only the one whose `os`/`cpu`/`libc` fit;
// - `user-questions-<platform>` for this host: the release-built, stripped addon.
//
// Usage: node scripts/pack.js <out-dir>. Writes both tarballs to <out-dir> and prints
// `{"main": path, "platform": path}`. Nothing in the working tree changes: the packages are
// staged in a temporary directory. Honours CARGO_TARGET_DIR and CARGO_BUILD_TARGET.
'use strict'

const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const PKG = path.resolve(__dirname, '..')

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {string} cwd
 */
function run(cmd, args, cwd) {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
}

/**
 * `npm pack` of `dir` into `out`; returns the tarball's path.
 * @param {string} dir
 * @param {string} out
 */
function pack(dir, out) {
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', out], dir))
  return path.join(out, info.filename)
}

function main() {
  const out = path.resolve(process.argv[2] ?? '.')
  fs.mkdirSync(out, { recursive: true })
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-pack-'))
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'))

    // The host's addon, release-built and stripped.
    const built = path.join(stage, 'built')
    const napi = path.join(PKG, 'node_modules', '.bin', 'napi')
    execFileSync(
      napi,
      ['build', '--platform', '--release', '--strip', '--no-js', '--dts', 'native.d.ts', '--output-dir', built],
      { cwd: PKG, stdio: ['ignore', 'inherit', 'inherit'] },
    )
    const [addon] = fs.readdirSync(built).filter((f) => f.endsWith('.node'))
    if (addon === undefined) throw new Error('napi build made no .node file')
    // user-questions.<platform>.node → npm/<platform>
    const platform = addon.slice(manifest.napi.binaryName.length + 1, -'.node'.length)
    const platformDir = path.join(stage, 'platform')
    fs.cpSync(path.join(PKG, 'npm', platform), platformDir, { recursive: true })
    fs.copyFileSync(path.join(built, addon), path.join(platformDir, addon))

    // The main package: the files of `files`, the README, and the optional dependencies.
    const mainDir = path.join(stage, 'main')
    fs.mkdirSync(mainDir)
    for (const entry of [...manifest.files, 'README.md']) {
      fs.cpSync(path.join(PKG, entry), path.join(mainDir, entry), { recursive: true })
    }
    const published = { ...manifest }
    delete published.devDependencies
    delete published.scripts
    published.optionalDependencies = Object.fromEntries(
      fs
        .readdirSync(path.join(PKG, 'npm'))
        .sort()
        .map((dir) => [
          JSON.parse(fs.readFileSync(path.join(PKG, 'npm', dir, 'package.json'), 'utf8')).name,
          manifest.version,
        ]),
    )
    fs.writeFileSync(path.join(mainDir, 'package.json'), `${JSON.stringify(published, null, 2)}\n`)

    const result = { main: pack(mainDir, out), platform: pack(platformDir, out) }
    process.stdout.write(`${JSON.stringify(result)}\n`)
  } finally {
    fs.rmSync(stage, { recursive: true, force: true })
  }
}

main()
