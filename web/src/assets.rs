//! The question page, embedded in the binary: no framework, no CDN, nothing fetched at run time.

/// `GET /`.
pub(crate) const INDEX_HTML: &str = include_str!("../assets/index.html");
/// `GET /app.js`: one ES module.
pub(crate) const APP_JS: &str = include_str!("../assets/app.js");
/// `GET /style.css`.
pub(crate) const STYLE_CSS: &str = include_str!("../assets/style.css");
/// `GET /icon.svg`: the tab's icon.
pub(crate) const ICON_SVG: &str = include_str!("../assets/icon.svg");
