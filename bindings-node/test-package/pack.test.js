// The packages as npm publishes them (scripts/pack.js): the main tarball is small and carries
// no binary, the host's platform tarball carries the release-built, stripped addon, and both
// installed offline into an empty project give a package that `require` and `import` load.
// Run by scripts/test-node after the main suite (it makes a release build).
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const PKG = path.resolve(__dirname, '..')
const MAIN_MAX_BYTES = 64 * 1024
const PLATFORM_MAX_BYTES = 4 * 1024 * 1024

/** The file names in a tarball. */
function entries(tarball) {
  return execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n')
}

/** One file of a tarball, as text. */
function extract(tarball, file) {
  return execFileSync('tar', ['-xzOf', tarball, file], { encoding: 'utf8' })
}

test('packed, installed offline into an empty project, the package loads', { timeout: 900000 }, () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-pack-test-'))
  try {
    const out = path.join(work, 'tarballs')
    const packed = execFileSync(process.execPath, [path.join(PKG, 'scripts', 'pack.js'), out], {
      cwd: PKG,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const { main, platform } = JSON.parse(packed.trim().split('\n').pop())

    // The main package: no binary, small, every platform package an optional dependency.
    const mainFiles = entries(main)
    assert.deepEqual(mainFiles.filter((f) => f.endsWith('.node')), [])
    assert.ok(fs.statSync(main).size < MAIN_MAX_BYTES, `main tarball is ${fs.statSync(main).size} bytes`)
    for (const f of ['index.js', 'index.d.ts', 'native.js', 'native.d.ts', 'lib/errors.js', 'README.md']) {
      assert.ok(mainFiles.includes(`package/${f}`), `the main tarball has ${f}`)
    }
    const manifest = JSON.parse(extract(main, 'package/package.json'))
    const platforms = fs.readdirSync(path.join(PKG, 'npm')).map((dir) => `user-questions-${dir}`)
    assert.deepEqual(Object.keys(manifest.optionalDependencies).sort(), platforms.sort())
    for (const version of Object.values(manifest.optionalDependencies)) assert.equal(version, manifest.version)

    // The host's platform package: one stripped release addon.
    const platformFiles = entries(platform).filter((f) => f.endsWith('.node'))
    assert.equal(platformFiles.length, 1)
    const size = fs.statSync(platform).size
    assert.ok(size < PLATFORM_MAX_BYTES, `platform tarball is ${size} bytes (a debug build is ~26 MB)`)
    const platformManifest = JSON.parse(extract(platform, 'package/package.json'))
    assert.ok(platforms.includes(platformManifest.name))
    assert.equal(platformManifest.version, manifest.version)

    // Installed from the two tarballs alone: no registry.
    const project = path.join(work, 'project')
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, 'package.json'), '{"name":"uq-pack-test","version":"1.0.0","private":true}\n')
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', main, platform], {
      cwd: project,
      stdio: ['ignore', 'inherit', 'inherit'],
    })
    const installed = path.join(project, 'node_modules')
    assert.ok(fs.existsSync(path.join(installed, platformManifest.name, platformFiles[0].slice('package/'.length))))
    assert.deepEqual(
      fs.readdirSync(path.join(installed, 'user-questions')).filter((f) => f.endsWith('.node')),
      [],
    )

    const check = `
      const answer = await ctx.userQuestions.ask({ questions: [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }] }] })
      console.log(JSON.stringify(answer), CODES.ASK_TIMED_OUT)`
    const expected = '{"answers":[{"id":"go","selected":["Yes"]}]} 17\n'
    const cjs = spawnSync(
      process.execPath,
      [
        '-e',
        `const { Context, AutoResponder, CODES } = require('user-questions')
         const ctx = new Context(); ctx.userQuestions.registerProvider(new AutoResponder())
         ;(async () => { ${check} })()`,
      ],
      { cwd: project, encoding: 'utf8', timeout: 20000 },
    )
    assert.equal(cjs.status, 0, cjs.stderr)
    assert.equal(cjs.stdout, expected)
    const esm = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { Context, AutoResponder, CODES } from 'user-questions'
         const ctx = new Context(); ctx.userQuestions.registerProvider(new AutoResponder())
         ${check}`,
      ],
      { cwd: project, encoding: 'utf8', timeout: 20000 },
    )
    assert.equal(esm.status, 0, esm.stderr)
    assert.equal(esm.stdout, expected)
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
})
