//! The console's scripts, styles and icon, inside the binary. Each is served under a name that
//! carries a hash of its content, so a browser may keep it for a year: a new build with a
//! changed file gives it a new name.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

struct Asset {
    /// The name before its hash, and its extension.
    stem: &'static str,
    extension: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const FILES: [Asset; 4] = [
    Asset {
        stem: "htmx-2.0.11",
        extension: "js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/htmx-2.0.11.min.js"),
    },
    Asset {
        stem: "console",
        extension: "js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/console.js"),
    },
    Asset {
        stem: "console",
        extension: "css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../assets/console.css"),
    },
    Asset {
        stem: "icon",
        extension: "svg",
        content_type: "image/svg+xml",
        bytes: include_bytes!("../assets/icon.svg"),
    },
];

/// Each file's served name, `<stem>.<first 10 hex digits of its SHA-256>.<extension>`.
static NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|file| {
            let digest = Sha256::digest(file.bytes);
            let hex: String = digest[..5].iter().map(|b| format!("{b:02x}")).collect();
            format!("{}.{hex}.{}", file.stem, file.extension)
        })
        .collect()
});

/// The paths pages link to, relative to the console's base.
#[derive(Debug, Clone)]
pub struct AssetPaths {
    pub htmx: String,
    pub script: String,
    pub style: String,
    pub icon: String,
}

pub fn paths() -> AssetPaths {
    let at = |i: usize| format!("assets/{}", NAMES[i]);
    AssetPaths {
        htmx: at(0),
        script: at(1),
        style: at(2),
        icon: at(3),
    }
}

/// `GET /console/assets/{name}`: the file of that exact name, cached for a year.
pub async fn serve(Path(name): Path<String>) -> Response {
    match NAMES.iter().position(|n| *n == name) {
        Some(i) => (
            [
                (header::CONTENT_TYPE, FILES[i].content_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            FILES[i].bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
