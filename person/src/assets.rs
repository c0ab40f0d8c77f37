//! The question page, embedded in the binary: no framework, no CDN, nothing fetched at run time.
//! The hub serves the same page.
//!
//! Not part of the supported API of this crate: it changes with the hub, in the same release.

/// `GET /`.
pub const INDEX_HTML: &str = include_str!("../assets/index.html");
/// `GET /app.js`: one ES module.
pub const APP_JS: &str = include_str!("../assets/app.js");
/// `GET /style.css`.
pub const STYLE_CSS: &str = include_str!("../assets/style.css");
/// `GET /icon.svg`: the tab's icon.
pub const ICON_SVG: &str = include_str!("../assets/icon.svg");
