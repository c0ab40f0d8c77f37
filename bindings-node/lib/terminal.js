// @ts-check
// The terminal question UI (§8), served natively.
'use strict'

const native = require('../native.js')

/** @type {(provider: TerminalProvider) => native.NativeTerminalProvider} */
let terminalNativeOf

/**
 * The terminal question UI (§8): the interactive screen when stdin and stderr are
 * terminals (and `TERM` is not `dumb`), else numbered line prompts on stderr answered from
 * stdin — decided when it is constructed. Served natively, on a terminal thread of its own:
 * its asks never run JS. Register it as the provider.
 */
class TerminalProvider {
  #native = new native.NativeTerminalProvider()

  /** Whether it draws the interactive screen (else it asks through line prompts). */
  get interactive() {
    return this.#native.interactive
  }

  static {
    terminalNativeOf = (provider) => provider.#native
  }
}

module.exports = {
  TerminalProvider,
  terminalNativeOf: (/** @type {TerminalProvider} */ provider) => terminalNativeOf(provider),
}
