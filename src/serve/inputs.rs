//! An attempt's turn input from its `attempt/run` params: the prompt, its images (bounded, and only
//! for a harness that takes images: otherwise the attempt fails preflight, since a model silently
//! not seeing the picture it was asked about would answer something else) and the thinking level
//! (a preference: a harness without a reasoning setting, or a level this build does not know, runs
//! at its default and the log says so).

use clawbridge_bridge::backend::{HarnessFacts, ThinkLevel, TurnInput};
use clawbridge_bridge::input;
use clawbridge_protocol::host::AttemptRunParams;

/// Why an attempt's input cannot run on its harness.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TurnInputError {
    /// The prompt has images and the harness cannot show them to its model.
    #[error("{harness} cannot take images ({count} attached)")]
    ImagesUnsupported {
        /// The harness id.
        harness: &'static str,
        /// How many images were attached.
        count: usize,
    },
    /// An image is unusable or the images are over the bounds.
    #[error(transparent)]
    Image(#[from] input::InputError),
}

/// The turn input of `params` on the harness `facts` describes. The prompt moves out of `params`
/// and the images' base64 is dropped once they are decoded: a running attempt holds its prompt and
/// images once (as the turn input), as the input budget charges them.
pub fn turn_input(params: &mut AttemptRunParams, facts: &HarnessFacts) -> Result<TurnInput, TurnInputError> {
    if !params.images.is_empty() && !facts.supports.images {
        return Err(TurnInputError::ImagesUnsupported { harness: facts.id, count: params.images.len() });
    }
    let images = input::images(params.images.iter().map(|i| (i.mime_type.as_str(), i.data.as_str())))?;
    params.images = Vec::new();
    let think_level = params.think_level.as_deref().and_then(|value| match ThinkLevel::parse(value) {
        Ok(level) if facts.supports.reasoning_level => Some(level),
        Ok(level) => {
            tracing::info!(
                harness = facts.id,
                ?level,
                "the harness has no reasoning setting; the thinking level is not applied"
            );
            None
        }
        Err(error) => {
            tracing::warn!(harness = facts.id, %error, "running at the backend's default thinking level");
            None
        }
    });
    Ok(TurnInput { text: std::mem::take(&mut params.prompt), images, think_level })
}

#[cfg(test)]
mod tests {
    use clawbridge_bridge::backend::Supports;
    use clawbridge_protocol::host::ImageInput;

    use super::*;

    const PIXEL: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    fn facts(supports: Supports) -> HarnessFacts {
        HarnessFacts {
            id: "h",
            backend: "b",
            label: "H",
            process: "p",
            native_session: "s",
            transcript_api: "a",
            supports,
            notice: None,
            fixed_approval: None,
        }
    }

    fn params(images: usize, think: Option<&str>) -> AttemptRunParams {
        AttemptRunParams {
            prompt: "look".into(),
            images: vec![ImageInput { data: PIXEL.into(), mime_type: "image/png".into() }; images],
            think_level: think.map(str::to_string),
            ..AttemptRunParams::default()
        }
    }

    #[test]
    fn images_reach_a_harness_that_takes_them_and_are_refused_by_one_that_does_not() {
        let both = facts(Supports { images: true, reasoning_level: true, ..Supports::default() });
        let input = turn_input(&mut params(2, Some("high")), &both).unwrap();
        assert_eq!(input.images.len(), 2);
        assert_eq!(input.images[0].mime_type(), "image/png");
        assert_eq!(input.think_level, Some(ThinkLevel::High));
        assert_eq!(input.text, "look");

        let text_only = facts(Supports::default());
        assert_eq!(
            turn_input(&mut params(1, None), &text_only),
            Err(TurnInputError::ImagesUnsupported { harness: "h", count: 1 })
        );
        let input = turn_input(&mut params(0, Some("high")), &text_only).unwrap();
        assert_eq!(input.think_level, None, "no reasoning setting: not applied");
    }

    #[test]
    fn a_broken_image_is_refused_and_an_unknown_level_runs_at_the_default() {
        let both = facts(Supports { images: true, reasoning_level: true, ..Supports::default() });
        let mut broken = params(1, Some("turbo"));
        broken.images[0].data = "%%%%".into();
        assert!(matches!(turn_input(&mut broken, &both), Err(TurnInputError::Image(_))));
        assert_eq!(turn_input(&mut params(0, Some("turbo")), &both).unwrap().think_level, None);
    }

    #[test]
    fn the_turn_input_takes_the_prompt_and_images_so_the_params_keep_no_copy() {
        let both = facts(Supports { images: true, ..Supports::default() });
        let mut params = params(2, None);
        let input = turn_input(&mut params, &both).unwrap();
        assert_eq!((input.text.as_str(), input.images.len()), ("look", 2));
        assert!(params.prompt.is_empty(), "the prompt moved into the turn input");
        assert!(params.images.is_empty(), "the images' base64 is gone once decoded");
    }
}
