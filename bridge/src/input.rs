//! What one turn takes besides its text: images attached to the prompt and the host's thinking
//! level, each checked and bounded before any backend sees it (docs/peers/openclaw.md#turn-inputs);
//! and the images of a tool result, bounded the same way.

use crate::events::ToolImage;

/// The most images one turn (or one host tool result) carries.
pub const MAX_IMAGES: usize = 16;
/// The most decoded bytes one image may have. Both models' own limits are lower for some formats;
/// this only keeps a host from handing the bridge an unbounded buffer.
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
/// The most decoded bytes all images of one turn may have together.
pub const MAX_TOTAL_IMAGE_BYTES: usize = 32 * 1024 * 1024;
/// The image types both backends accept.
pub const IMAGE_MIME_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// One image, as base64 of its bytes with its media type, checked by [`ImageData::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageData {
    /// One of [`IMAGE_MIME_TYPES`].
    mime_type: String,
    /// Standard base64 (with padding) of the image bytes.
    base64: String,
    /// The decoded size.
    bytes: usize,
}

impl ImageData {
    /// Checks `base64` (standard alphabet; whitespace tolerated) and `mime_type`, and bounds its
    /// decoded size by [`MAX_IMAGE_BYTES`].
    pub fn new(mime_type: &str, base64: &str) -> Result<ImageData, InputError> {
        let mime_type = mime_type.trim().to_ascii_lowercase();
        if !IMAGE_MIME_TYPES.contains(&mime_type.as_str()) {
            return Err(InputError::UnsupportedImageType { mime_type });
        }
        // Checked, never decoded: the bridge only passes the base64 on, so a huge image is refused
        // without allocating its bytes.
        let compact: String = base64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let bytes = base64_len(&compact)?;
        if bytes == 0 {
            return Err(InputError::InvalidBase64 { reason: "the image is empty".into() });
        }
        if bytes > MAX_IMAGE_BYTES {
            return Err(InputError::ImageTooLarge { bytes, limit: MAX_IMAGE_BYTES });
        }
        Ok(ImageData { mime_type, base64: compact, bytes })
    }

    /// The media type (`image/png`).
    pub fn mime_type(&self) -> &str {
        &self.mime_type
    }

    /// The base64 of the bytes.
    pub fn base64(&self) -> &str {
        &self.base64
    }

    /// The decoded size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Never true: an empty image is refused by [`ImageData::new`].
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The image as a `data:` URL (what Codex's `image` input takes).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.base64)
    }
}

/// The decoded length of standard, padded base64, or why it is not that.
fn base64_len(text: &str) -> Result<usize, InputError> {
    let invalid = |reason: &str| InputError::InvalidBase64 { reason: reason.to_owned() };
    if text.len() % 4 != 0 {
        return Err(invalid("its length is not a multiple of 4"));
    }
    let padding = text.bytes().rev().take_while(|&b| b == b'=').count();
    if padding > 2 {
        return Err(invalid("too much padding"));
    }
    let body = &text.as_bytes()[..text.len() - padding];
    if !body.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/') {
        return Err(invalid("a character outside the standard alphabet"));
    }
    Ok(text.len() / 4 * 3 - padding)
}

/// Checks a list of `(mime_type, base64)` images against the per-image, count and total bounds.
pub fn images<'a>(raw: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Vec<ImageData>, InputError> {
    let mut out = Vec::new();
    let mut total = 0usize;
    for (mime_type, data) in raw {
        if out.len() == MAX_IMAGES {
            return Err(InputError::TooManyImages { limit: MAX_IMAGES });
        }
        let image = ImageData::new(mime_type, data)?;
        total = total.saturating_add(image.len());
        if total > MAX_TOTAL_IMAGE_BYTES {
            return Err(InputError::ImagesTooLarge { limit: MAX_TOTAL_IMAGE_BYTES });
        }
        out.push(image);
    }
    Ok(out)
}

/// The images of a tool result that fit the bounds, and a note for the model about any left out
/// (a broken image, one too many, one too large): the model is told rather than silently shown less.
pub fn tool_images(images: Vec<ToolImage>) -> (Vec<ToolImage>, Option<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut total = 0usize;
    for image in images {
        let checked = if kept.len() == MAX_IMAGES {
            Err(InputError::TooManyImages { limit: MAX_IMAGES })
        } else {
            ImageData::new(&image.mime_type, &image.data)
        };
        match checked {
            Ok(data) if total.saturating_add(data.len()) <= MAX_TOTAL_IMAGE_BYTES => {
                total += data.len();
                kept.push(ToolImage { data: data.base64, mime_type: data.mime_type });
            }
            Ok(_) => dropped.push(InputError::ImagesTooLarge { limit: MAX_TOTAL_IMAGE_BYTES }.to_string()),
            Err(error) => dropped.push(error.to_string()),
        }
    }
    let note = (!dropped.is_empty())
        .then(|| format!("[{} image(s) of this result were left out: {}]", dropped.len(), dropped.join("; ")));
    (kept, note)
}

/// The image of a `data:<type>;base64,<data>` URL, if it is one.
pub fn image_from_data_url(url: &str) -> Option<ToolImage> {
    let (mime_type, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
    Some(ToolImage { data: data.to_owned(), mime_type: mime_type.to_owned() })
}

/// A tool image as a `data:` URL.
pub fn data_url(image: &ToolImage) -> String {
    format!("data:{};base64,{}", image.mime_type, image.data)
}

/// The host's thinking level (OpenClaw's `ThinkLevel`), which each backend maps to its own
/// reasoning setting (docs/peers/openclaw.md#thinking-levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThinkLevel {
    /// No reasoning.
    Off,
    /// The least reasoning a model offers.
    Minimal,
    /// Little reasoning.
    Low,
    /// The usual amount.
    Medium,
    /// Much reasoning.
    High,
    /// More than high.
    XHigh,
    /// The most a model offers.
    Max,
    /// The model decides (the backend's own default).
    Adaptive,
}

impl ThinkLevel {
    /// Reads OpenClaw's value (`off`, `minimal`, `low`, `medium`, `high`, `xhigh`, `adaptive`,
    /// `max`; the CLI also offers `ultra`, taken as `max`), ignoring ASCII case.
    pub fn parse(value: &str) -> Result<ThinkLevel, InputError> {
        Ok(match value.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => ThinkLevel::Off,
            "minimal" => ThinkLevel::Minimal,
            "low" => ThinkLevel::Low,
            "medium" => ThinkLevel::Medium,
            "high" => ThinkLevel::High,
            "xhigh" => ThinkLevel::XHigh,
            "max" | "ultra" => ThinkLevel::Max,
            "adaptive" => ThinkLevel::Adaptive,
            _ => return Err(InputError::UnknownThinkLevel { value: value.chars().take(64).collect() }),
        })
    }
}

/// Why an input was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The image's media type is not one both backends accept.
    #[error("images of type {mime_type:?} are not supported (use one of {IMAGE_MIME_TYPES:?})")]
    UnsupportedImageType {
        /// The type as given.
        mime_type: String,
    },
    /// The image's data is not standard base64.
    #[error("an image is not valid base64: {reason}")]
    InvalidBase64 {
        /// The decoder's reason.
        reason: String,
    },
    /// One image is larger than the bound.
    #[error("an image has {bytes} bytes, more than the {limit} allowed")]
    ImageTooLarge {
        /// Its size (estimated from its base64 when it was refused before decoding).
        bytes: usize,
        /// The bound.
        limit: usize,
    },
    /// More images than the bound.
    #[error("more than {limit} images")]
    TooManyImages {
        /// The bound.
        limit: usize,
    },
    /// The images together are larger than the bound.
    #[error("the images have more than {limit} bytes together")]
    ImagesTooLarge {
        /// The bound.
        limit: usize,
    },
    /// A thinking level this build does not know.
    #[error("unknown thinking level {value:?}")]
    UnknownThinkLevel {
        /// The value as given (at most 64 characters).
        value: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1×1 transparent PNG.
    const PIXEL: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    #[test]
    fn an_image_is_checked_and_becomes_a_data_url() {
        let image = ImageData::new("Image/PNG", PIXEL).unwrap();
        assert_eq!(image.mime_type(), "image/png");
        assert_eq!(image.len(), 70);
        assert_eq!(image.data_url(), format!("data:image/png;base64,{PIXEL}"));
        assert!(matches!(ImageData::new("image/tiff", PIXEL), Err(InputError::UnsupportedImageType { .. })));
        assert!(matches!(ImageData::new("image/png", "not base64!"), Err(InputError::InvalidBase64 { .. })));
        assert!(matches!(ImageData::new("image/png", ""), Err(InputError::InvalidBase64 { .. })));
    }

    #[test]
    fn images_are_bounded_one_by_one_in_count_and_together() {
        let big = "A".repeat((MAX_IMAGE_BYTES / 3 + 2) * 4);
        assert!(matches!(ImageData::new("image/png", &big), Err(InputError::ImageTooLarge { .. })));
        let many = vec![("image/png", PIXEL); MAX_IMAGES + 1];
        assert_eq!(images(many), Err(InputError::TooManyImages { limit: MAX_IMAGES }));
        let nearly = "A".repeat(MAX_IMAGE_BYTES / 3 * 4);
        let four = vec![("image/png", nearly.as_str()); 4];
        assert_eq!(images(four), Err(InputError::ImagesTooLarge { limit: MAX_TOTAL_IMAGE_BYTES }));
        assert_eq!(images(vec![("image/png", PIXEL); 2]).unwrap().len(), 2);
    }

    #[test]
    fn tool_images_keep_what_fits_and_name_what_was_left_out() {
        let good = ToolImage { data: PIXEL.into(), mime_type: "image/png".into() };
        let bad = ToolImage { data: "%%".into(), mime_type: "image/png".into() };
        let (kept, note) = tool_images(vec![good.clone(), bad]);
        assert_eq!(kept, std::slice::from_ref(&good));
        assert!(note.unwrap_or_default().contains("1 image(s)"));
        let (kept, note) = tool_images(vec![good.clone(); MAX_IMAGES + 2]);
        assert_eq!(kept.len(), MAX_IMAGES);
        assert!(note.unwrap_or_default().contains("2 image(s)"));
        assert_eq!(tool_images(vec![good.clone()]), (vec![good.clone()], None));
        let url = data_url(&good);
        assert_eq!(image_from_data_url(&url), Some(good));
        assert_eq!(image_from_data_url("https://example.com/a.png"), None);
    }

    #[test]
    fn openclaw_s_think_levels_are_read_and_others_refused() {
        for (value, level) in [
            ("off", ThinkLevel::Off),
            ("minimal", ThinkLevel::Minimal),
            ("low", ThinkLevel::Low),
            ("Medium", ThinkLevel::Medium),
            ("high", ThinkLevel::High),
            ("xhigh", ThinkLevel::XHigh),
            ("max", ThinkLevel::Max),
            ("ultra", ThinkLevel::Max),
            ("adaptive", ThinkLevel::Adaptive),
        ] {
            assert_eq!(ThinkLevel::parse(value), Ok(level), "{value}");
        }
        assert!(matches!(ThinkLevel::parse("extreme"), Err(InputError::UnknownThinkLevel { .. })));
    }
}
