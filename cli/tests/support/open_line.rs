//! The `open` line of a server `uq` started with an access file (`uq serve --access`,
//! `uq ask --web --access`): shared by `cli/tests/hub.rs` and `cli/tests/web.rs`.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStderr};

/// Reads `child`'s first stderr line, `open http://ADDR/` — with no token, as with an access
/// file — and returns ADDR and the rest of its stderr, still open for reading.
pub fn open_without_token(child: &mut Child) -> (String, BufReader<ChildStderr>) {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim_end()
        .strip_prefix("open http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("an open line without a token: {line:?}"))
        .to_owned();
    (addr, stderr)
}
