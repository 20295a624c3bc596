//! A turn's input in Claude Code's terms: the prompt and its images as one stream-json `user` line
//! (a text block, then Messages API `image` blocks), the host's thinking level as the thinking
//! budget the `set_max_thinking_tokens` control request sets before the line is written
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

/// The `set_max_thinking_tokens` request for a thinking level: `0` turns thinking off, a budget
/// for each level after the CLI's own keyword tiers (4 000 "think", 10 000 "think hard", 31 999
/// "ultrathink"), `null` (the session's default) for `adaptive`.
pub fn thinking_request(level: ThinkLevel) -> Value {
    let budget: Option<u32> = match level {
        ThinkLevel::Off => Some(0),
        ThinkLevel::Minimal => Some(1_024),
        ThinkLevel::Low => Some(4_000),
        ThinkLevel::Medium => Some(10_000),
        ThinkLevel::High | ThinkLevel::XHigh | ThinkLevel::Max => Some(31_999),
        // `adaptive`, and a level added later: the session's default, never a guess.
        _ => None,
    };
    json!({"max_thinking_tokens": budget})
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
    fn thinking_levels_map_to_budgets() {
        let budget = |level| thinking_request(level)["max_thinking_tokens"].clone();
        assert_eq!(budget(ThinkLevel::Off), json!(0));
        assert_eq!(budget(ThinkLevel::Minimal), json!(1_024));
        assert_eq!(budget(ThinkLevel::Low), json!(4_000));
        assert_eq!(budget(ThinkLevel::Medium), json!(10_000));
        assert_eq!(budget(ThinkLevel::High), json!(31_999));
        assert_eq!(budget(ThinkLevel::Max), json!(31_999));
        assert_eq!(budget(ThinkLevel::Adaptive), Value::Null);
    }
}
