//! The question page: the web provider's page, embedded in the binary (no framework, no CDN,
//! nothing fetched at run time). The hub serves the same API, so the same page works.

/// `GET /`.
pub(crate) const INDEX_HTML: &str = include_str!("../../web/assets/index.html");
/// `GET /app.js`: one ES module.
pub(crate) const APP_JS: &str = include_str!("../../web/assets/app.js");
/// `GET /style.css`.
pub(crate) const STYLE_CSS: &str = include_str!("../../web/assets/style.css");
/// `GET /icon.svg`: the tab's icon.
pub(crate) const ICON_SVG: &str = include_str!("../../web/assets/icon.svg");
