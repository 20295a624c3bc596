//! A turn's input in Claude Code's terms: the prompt and its images as one stream-json `user` line
//! (a text block, then Messages API `image` blocks), the host's thinking level as the effort (or
//! thinking off) a control request sets before the line is written
//! (docs/peers/claude.md#turn-input).

use clawbridge_bridge::backend::{ThinkLevel, TurnInput};
use clawbridge_protocol::claude::UserLine;
use serde_json::{Value, json};

/// The `user` line of a turn: [`UserLine::text`] with each image appended as a base64 `image` block.
pub fn user_line(input: &TurnInput) -> Value {
    let mut line = serde_json::to_value(UserLine::text(input.text.clone())).unwrap_or(Value::Null);
    if let Some(blocks) = line.pointer_mut("/message/content").and_then(Value::as_array_mut) {
        blocks.extend(input.images.iter().map(|image| {
            json!({"type": "image", "source": {"type": "base64", "media_type": image.mime_type(), "data": image.base64()}})
        }));
    }
    line
}

/// The control request that sets a thinking level before the turn's line, as `(subtype, body)`:
/// `off` turns thinking off (`set_max_thinking_tokens` 0); every other level is the CLI's effort
/// setting (`apply_flag_settings` with `effortLevel`: `low`, `medium`, `high`, `xhigh`, `max`), which
/// 2.1.328 sends as the request's `output_config.effort` with adaptive thinking. `adaptive` (and a
/// level added later) keeps the session's default: `None`.
pub fn thinking_request(level: ThinkLevel) -> Option<(&'static str, Value)> {
    let effort = match level {
        ThinkLevel::Off => return Some(("set_max_thinking_tokens", json!({"max_thinking_tokens": 0}))),
        ThinkLevel::Minimal | ThinkLevel::Low => "low",
        ThinkLevel::Medium => "medium",
        ThinkLevel::High => "high",
        ThinkLevel::XHigh => "xhigh",
        ThinkLevel::Max => "max",
        _ => return None,
    };
    Some(("apply_flag_settings", json!({"settings": {"effortLevel": effort}})))
}

#[cfg(test)]
mod tests {
    use clawbridge_bridge::input::images;

    use super::*;

    const PIXEL: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    #[test]
    fn images_follow_the_text_as_base64_image_blocks() {
        let input = TurnInput {
            text: "What is this?".into(),
            images: images([("image/png", PIXEL)]).unwrap(),
            think_level: None,
        };
        let line = user_line(&input);
        assert_eq!(line["message"]["role"], "user");
        assert_eq!(
            line["message"]["content"],
            json!([
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}
            ])
        );
        assert_eq!(user_line(&TurnInput::text("hi")), serde_json::to_value(UserLine::text("hi")).unwrap());
    }

    #[test]
    fn thinking_levels_map_to_efforts_and_off_to_no_thinking() {
        let effort =
            |level| thinking_request(level).map(|(subtype, body)| (subtype, body["settings"]["effortLevel"].clone()));
        assert_eq!(
            thinking_request(ThinkLevel::Off),
            Some(("set_max_thinking_tokens", json!({"max_thinking_tokens": 0})))
        );
        assert_eq!(effort(ThinkLevel::Minimal), Some(("apply_flag_settings", json!("low"))));
        assert_eq!(effort(ThinkLevel::Low), Some(("apply_flag_settings", json!("low"))));
        assert_eq!(effort(ThinkLevel::Medium), Some(("apply_flag_settings", json!("medium"))));
        assert_eq!(effort(ThinkLevel::High), Some(("apply_flag_settings", json!("high"))));
        assert_eq!(effort(ThinkLevel::XHigh), Some(("apply_flag_settings", json!("xhigh"))));
        assert_eq!(effort(ThinkLevel::Max), Some(("apply_flag_settings", json!("max"))));
        assert_eq!(thinking_request(ThinkLevel::Adaptive), None);
    }
}
