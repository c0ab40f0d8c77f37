// The package against the rest of the project: its version is the Cargo workspace's, its code
// table is the core's, a panic in the addon is an error (not an abort), and the Node
// snippets of the READMEs run as written.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const ts = require('typescript')

const native = require('../native.js')
const pkg = require('..')

const PKG = path.resolve(__dirname, '..')
const ROOT = path.resolve(PKG, '..')

test('package.json and every platform package have the Cargo workspace version', () => {
  const cargo = fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8')
  const section = cargo.slice(cargo.indexOf('[workspace.package]'))
  const version = /^version\s*=\s*"([^"]+)"/m.exec(section)?.[1]
  assert.ok(version, 'Cargo.toml has [workspace.package] version')
  assert.equal(require('../package.json').version, version)
  const dirs = fs.readdirSync(path.join(PKG, 'npm'))
  assert.ok(dirs.length > 0)
  for (const dir of dirs) {
    const platform = JSON.parse(fs.readFileSync(path.join(PKG, 'npm', dir, 'package.json'), 'utf8'))
    assert.equal(platform.version, version, `npm/${dir}`)
    assert.equal(platform.name, `user-questions-${dir}`)
  }
  // The generated loader checks platform packages against the version it was generated for.
  assert.match(fs.readFileSync(path.join(PKG, 'native.js'), 'utf8'), new RegExp(`!== '${version.replace(/\./g, '\\.')}'`))
})

test('the code table of index.d.ts is the core table (names and numbers)', () => {
  const source = ts.createSourceFile(
    'index.d.ts',
    fs.readFileSync(path.join(PKG, 'index.d.ts'), 'utf8'),
    ts.ScriptTarget.Latest,
    true,
  )
  const node = source.statements.find(
    (s) => ts.isVariableStatement(s) && s.declarationList.declarations[0].name.text === 'CODES',
  )
  const literal = node.declarationList.declarations[0].type.typeArguments[0]
  const declared = literal.members.map((m) => [m.name.text, Number(m.type.literal.text)])
  const core = native.codes().map(({ name, number }) => [name, number])
  assert.deepEqual(declared, core)
  assert.deepEqual(Object.entries(pkg.CODES), core)
})

test('a panic inside the addon becomes an error, and the process goes on', () => {
  assert.throws(() => native.panicForTest('deliberate panic for the test'), (err) => {
    assert.ok(err instanceof Error)
    assert.equal(err.message, 'deliberate panic for the test')
    return true
  })
  // Through the JS layer's converter it is an INTERNAL UserQuestionError.
  const { callNative } = require('../lib/errors.js')
  assert.throws(() => callNative(() => native.panicForTest('again')), {
    name: 'UserQuestionError',
    code: 'INTERNAL',
    message: 'again',
  })
  // Still alive and working.
  assert.equal(new pkg.AutoResponder().policy, 'first')
})

test('every #[napi] function and method of the addon catches panics', () => {
  const src = path.join(PKG, 'src')
  for (const file of fs.readdirSync(src)) {
    const lines = fs.readFileSync(path.join(src, file), 'utf8').split('\n')
    lines.forEach((line, i) => {
      if (!line.trim().startsWith('#[napi')) return
      let j = i + 1
      while (/^\s*(#\[|\/\/\/)/.test(lines[j])) j++
      if (/^\s*pub fn /.test(lines[j])) {
        assert.match(line, /catch_unwind/, `src/${file}:${i + 1} exports a function without catch_unwind`)
      }
    })
  }
})

/** The first ```js block of a README. */
function snippet(readme) {
  const text = fs.readFileSync(readme, 'utf8')
  const match = /```js\n([\s\S]*?)```/.exec(text)
  assert.ok(match, `${readme} has a js snippet`)
  return match[1]
}

/**
 * Runs `code` where `user-questions` is this package: as an ES module when it imports, else
 * as CommonJS with top-level await allowed. Returns what `epilogue` prints, parsed.
 */
function runSnippet(code, epilogue) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-readme-'))
  try {
    fs.mkdirSync(path.join(dir, 'node_modules'))
    fs.symlinkSync(PKG, path.join(dir, 'node_modules', 'user-questions'), 'dir')
    const esm = /^import /m.test(code)
    const file = path.join(dir, esm ? 'snippet.mjs' : 'snippet.js')
    fs.writeFileSync(
      file,
      esm
        ? `${code}\n${epilogue}\n`
        : `(async () => {\n${code}\n${epilogue}\n})().catch((e) => { console.error(e); process.exit(1) })\n`,
    )
    const run = spawnSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 20000 })
    assert.equal(run.signal, null, 'the snippet hung')
    assert.equal(run.status, 0, run.stderr)
    return JSON.parse(run.stdout)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const ANSWER = { answers: [{ id: 'go', selected: ['Yes'] }] }

test("the project README's Node snippet runs as written", () => {
  const out = runSnippet(snippet(path.join(ROOT, 'README.md')), 'console.log(JSON.stringify({ answer, result }))')
  assert.deepEqual(out.answer, ANSWER)
  assert.equal(out.result.isError, false)
  assert.deepEqual(out.result.value, ANSWER)
})

test("the package README's snippet runs as written", () => {
  const out = runSnippet(snippet(path.join(PKG, 'README.md')), 'console.log(JSON.stringify({ answer, result }))')
  assert.deepEqual(out.answer, ANSWER)
  assert.equal(out.result.isError, false)
})

test("the READMEs' Node snippets type-check as strict TypeScript against index.d.ts", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-readme-ts-'))
  try {
    fs.mkdirSync(path.join(dir, 'node_modules'))
    fs.symlinkSync(PKG, path.join(dir, 'node_modules', 'user-questions'), 'dir')
    const files = [path.join(ROOT, 'README.md'), path.join(PKG, 'README.md')].map((readme, i) => {
      const file = path.join(dir, `snippet${i}.mts`)
      fs.writeFileSync(file, `${snippet(readme)}\nexport {}\n`)
      return file
    })
    const tsc = require.resolve('typescript/bin/tsc')
    const args = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node', '--typeRoots', path.join(PKG, 'node_modules', '@types')]
    const run = spawnSync(process.execPath, [tsc, ...args, ...files], { cwd: dir, encoding: 'utf8', timeout: 120000 })
    assert.equal(run.status, 0, run.stdout + run.stderr)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('the package README reads on its own: no links or paths into the repository', () => {
  const text = fs.readFileSync(path.join(PKG, 'README.md'), 'utf8')
  assert.doesNotMatch(text, /\.\.\//, 'a relative path outside the package')
  assert.doesNotMatch(text, /\]\((?!https:)/, 'a relative link')
})

test('the JS layer is type-checked: every module is // @ts-check and in tsconfig.json', () => {
  const files = ['index.js', ...fs.readdirSync(path.join(PKG, 'lib')).map((f) => `lib/${f}`), 'scripts/pack.js']
  for (const file of files) {
    assert.match(fs.readFileSync(path.join(PKG, file), 'utf8'), /^(#!.*\n)?\/\/ @ts-check\n/, file)
  }
  const config = JSON.parse(fs.readFileSync(path.join(PKG, 'tsconfig.json'), 'utf8'))
  assert.equal(config.compilerOptions.checkJs, true)
  assert.equal(config.compilerOptions.strict, true)
  assert.deepEqual(config.include, ['index.js', 'lib/*.js', 'scripts/*.js'])
})
