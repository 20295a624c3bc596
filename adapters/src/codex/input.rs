//! A turn's input in Codex's terms: the prompt and its images as `turn/start` input items, the
//! host's thinking level as the turn's `effort` (docs/peers/codex.md#turn-input).

use clawbridge_bridge::backend::{ThinkLevel, TurnInput};
use clawbridge_protocol::codex::turn::UserInput;

/// The `turn/start` input items: the text, then each image as a `data:` URL (Codex forwards it to
/// the model as an `input_image`; no file is written anywhere).
pub fn user_inputs(input: &TurnInput) -> Vec<UserInput> {
    let mut items = vec![UserInput::text(input.text.clone())];
    items.extend(input.images.iter().map(|image| UserInput::image_url(image.data_url())));
    items
}

/// Codex's reasoning effort for a thinking level (`none`, `minimal`, `low`, `medium`, `high`,
/// `xhigh`); `adaptive` leaves the model's own default (no `effort` sent).
pub fn effort(level: ThinkLevel) -> Option<&'static str> {
    Some(match level {
        ThinkLevel::Off => "none",
        ThinkLevel::Minimal => "minimal",
        ThinkLevel::Low => "low",
        ThinkLevel::Medium => "medium",
        ThinkLevel::High => "high",
        // Codex's highest level that every reasoning model it lists takes.
        ThinkLevel::XHigh | ThinkLevel::Max => "xhigh",
        ThinkLevel::Adaptive => return None,
        // A level added later: the model's default, never a guess.
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use clawbridge_bridge::input::images;

    use super::*;

    const PIXEL: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    #[test]
    fn images_follow_the_text_as_data_urls() {
        let input = TurnInput {
            text: "What is this?".into(),
            images: images([("image/png", PIXEL)]).unwrap(),
            think_level: None,
        };
        let items = serde_json::to_value(user_inputs(&input)).unwrap();
        assert_eq!(
            items,
            serde_json::json!([
                {"type": "text", "text": "What is this?", "text_elements": []},
                {"type": "image", "url": format!("data:image/png;base64,{PIXEL}")}
            ])
        );
    }

    #[test]
    fn thinking_levels_map_to_codex_efforts() {
        let table = [
            (ThinkLevel::Off, Some("none")),
            (ThinkLevel::Minimal, Some("minimal")),
            (ThinkLevel::Low, Some("low")),
            (ThinkLevel::Medium, Some("medium")),
            (ThinkLevel::High, Some("high")),
            (ThinkLevel::XHigh, Some("xhigh")),
            (ThinkLevel::Max, Some("xhigh")),
            (ThinkLevel::Adaptive, None),
        ];
        for (level, expected) in table {
            assert_eq!(effort(level), expected, "{level:?}");
        }
    }
}
