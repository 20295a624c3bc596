use serde_json::json;

use super::*;

/// Decodes `session/update` params both ways — in one pass from their text and from the `Value` —
/// and checks that they agree.
fn note_both(params: Option<Value>) -> SessionNotification {
    let text = params.as_ref().map(|p| serde_json::value::to_raw_value(p).unwrap());
    let from_raw = SessionNotification::decode_raw(text.as_deref());
    assert_eq!(from_raw, SessionNotification::decode(params), "{text:?}");
    from_raw
}

/// [`note_both`] for one update.
fn update_both(raw: Value) -> SessionUpdate {
    let text = serde_json::value::to_raw_value(&raw).unwrap();
    let from_raw = SessionUpdate::decode_raw(&text);
    assert_eq!(from_raw, SessionUpdate::decode(raw), "{text}");
    from_raw
}

#[test]
fn only_the_integer_one_is_accepted_as_the_agent_s_version() {
    assert_eq!(negotiated_version(&json!(1)), Ok(1));
    for answer in [json!(2), json!("1.0"), json!(65_537), json!(-1), json!(1.5), Value::Null, json!("2025-01-01")] {
        let refused = negotiated_version(&answer).unwrap_err();
        assert_eq!(refused.offered, 1);
        assert_eq!(refused.answered, answer.to_string());
        assert!(refused.to_string().contains(&answer.to_string()), "{refused}");
    }
}

#[test]
fn updates_decode_by_tag_and_unknown_or_broken_ones_keep_their_json() {
    let note = note_both(Some(json!({"sessionId": "s1", "update": {
        "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Run", "kind": "execute", "status": "in_progress",
        "content": [{"type": "content", "content": {"type": "text", "text": "out"}}, {"type": "weird"}],
        "rawInput": {"command": "ls"}, "future": true
    }})));
    assert_eq!(note.session_id, "s1");
    let SessionUpdate::ToolCall(call) = note.update else { panic!("{note:?}") };
    assert_eq!(call.kind, Some(ToolKind::Execute));
    assert_eq!(call.status, Some(ToolCallStatus::InProgress));
    assert_eq!(call.content.unwrap()[1], ToolCallContent::Other);

    let raw = json!({"sessionUpdate": "from_the_future", "x": 1});
    assert_eq!(
        update_both(raw.clone()),
        SessionUpdate::Unknown { kind: "from_the_future".into(), raw, decode_error: None }
    );
    let broken = update_both(json!({"sessionUpdate": "agent_message_chunk", "content": 5}));
    assert!(matches!(broken, SessionUpdate::Unknown { decode_error: Some(_), .. }), "{broken:?}");
    let odd_kind = update_both(json!({"sessionUpdate": "tool_call", "toolCallId": "c", "kind": "teleport"}));
    let SessionUpdate::ToolCall(call) = odd_kind else { panic!() };
    assert_eq!(call.kind, Some(ToolKind::Unknown("teleport".into())));
    assert!(matches!(note_both(None).update, SessionUpdate::Unknown { .. }));
    for odd in
        [json!([1]), json!({"update": 3, "sessionId": 4}), json!({"sessionId": "s", "sessionId": "t"}), json!({})]
    {
        note_both(Some(odd));
    }
    let twice = r#"{"sessionId":"a","update":{"sessionUpdate":"plan","entries":[]},"sessionId":"b"}"#;
    let twice = serde_json::value::RawValue::from_string(twice.to_owned()).unwrap();
    assert_eq!(SessionNotification::decode_raw(Some(&twice)).session_id, "b", "a member twice: the last counts");
    assert!(matches!(
        update_both(json!({"sessionUpdate": "current_mode_update", "currentModeId": "ask"})),
        SessionUpdate::Metadata { .. }
    ));
}

#[test]
fn permission_answers_and_prompts_have_the_spec_s_shape() {
    let selected = RequestPermissionResponse { outcome: PermissionOutcome::Selected { option_id: "allow".into() } };
    assert_eq!(
        serde_json::to_value(&selected).unwrap(),
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
    );
    let cancelled = RequestPermissionResponse { outcome: PermissionOutcome::Cancelled };
    assert_eq!(serde_json::to_value(&cancelled).unwrap(), json!({"outcome": {"outcome": "cancelled"}}));
    let prompt = PromptParams {
        session_id: "s".into(),
        prompt: vec![
            ContentBlock::Text { text: "hi".into() },
            ContentBlock::Image { data: "AA==".into(), mime_type: "image/png".into() },
        ],
    };
    assert_eq!(
        serde_json::to_value(&prompt).unwrap(),
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]})
    );
    let answer: PromptResponse = serde_json::from_value(json!({"stopReason": "refusal"})).unwrap();
    assert_eq!(answer.stop_reason, StopReason::Refusal);
}
