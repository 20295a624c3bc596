//! Claude Code's `AskUserQuestion` tool as a question for the user: the CLI asks permission to use
//! it through `can_use_tool` with `{questions: [{question, header, options: [{label,
//! description}], multiSelect}]}`; the answer is an allow whose `updatedInput` adds `answers`, the
//! chosen labels (joined by ", ") keyed by each question's text (docs/peers/claude.md#askuserquestion).
//! When nobody answers the call is denied with a message that says so.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use clawbridge_bridge::attempt::TurnActivity;
use clawbridge_bridge::attempt::hooks::{NoUserInput, UserInputAsker, UserInputRequest, UserQuestion};
use clawbridge_protocol::claude::{CanUseToolRequest, PermissionResult};
use serde_json::{Map, Value};

/// The CLI's question tool.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// Who answers the agent's questions; shared by a session and its processes' handlers, and
/// swapped for every turn (the asker names the attempt).
pub type SharedAsker = Arc<RwLock<Arc<dyn UserInputAsker>>>;

/// A [`SharedAsker`] with nobody to ask.
pub fn nobody() -> SharedAsker {
    Arc::new(RwLock::new(Arc::new(NoUserInput)))
}

/// Points `shared` at `asker`.
pub fn set(shared: &SharedAsker, asker: Arc<dyn UserInputAsker>) {
    *shared.write().unwrap_or_else(std::sync::PoisonError::into_inner) = asker;
}

/// The questions of an `AskUserQuestion` input, each keyed by its text (the key of its answer).
fn questions(input: &Value) -> Vec<UserQuestion> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    input
        .get("questions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|q| !text(q, "question").is_empty())
        .map(|q| UserQuestion {
            id: text(q, "question"),
            header: text(q, "header"),
            question: text(q, "question"),
            is_other: true,
            is_secret: false,
            options: q
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|o| (text(o, "label"), text(o, "description")))
                .filter(|(label, _)| !label.is_empty())
                .collect(),
        })
        .collect()
}

/// The `can_use_tool` answer for an `AskUserQuestion` call, asking `asker` within `limit`.
pub async fn answer(
    ask: &CanUseToolRequest,
    asker: &SharedAsker,
    activity: &Arc<TurnActivity>,
    limit: Duration,
) -> Result<PermissionResult, String> {
    let questions = questions(&ask.input);
    if questions.is_empty() {
        return Err("the question tool was called without a question".into());
    }
    let asker = asker.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let request = UserInputRequest { call_id: ask.tool_use_id.clone(), questions };
    // A person answering is not a stuck turn.
    let _pending = activity.person_asked();
    let answers = match tokio::time::timeout(limit, asker.ask(request)).await {
        Ok(Ok(answers)) if answers.values().any(|a| !a.is_empty()) => answers,
        Ok(Ok(_)) => return Err("the person gave no answer".into()),
        Ok(Err(why)) => return Err(why),
        Err(_) => return Err(format!("nobody answered within {}s", limit.as_secs())),
    };
    let answered: Map<String, Value> =
        answers.into_iter().filter(|(_, a)| !a.is_empty()).map(|(id, a)| (id, Value::String(a.join(", ")))).collect();
    let mut input = ask.input.clone();
    match input.as_object_mut() {
        Some(fields) => {
            fields.insert("answers".into(), Value::Object(answered));
        }
        None => return Err("the question tool's input is not an object".into()),
    }
    Ok(PermissionResult::allow(input))
}

/// What the model reads when no person answered (`why`).
pub fn unanswered_message(why: &str) -> String {
    format!("No person could answer these questions ({why}); carry on without the answers.")
}

#[cfg(test)]
mod tests {
    use clawbridge_bridge::attempt::hooks::UserAnswers;
    use futures::future::BoxFuture;
    use serde_json::json;

    use super::*;

    struct Person(Result<UserAnswers, String>);

    impl UserInputAsker for Person {
        fn ask(&self, request: UserInputRequest) -> BoxFuture<'static, Result<UserAnswers, String>> {
            assert_eq!(request.questions[0].id, "Which size?");
            assert_eq!(
                request.questions[0].options,
                vec![("small".into(), "s".into()), ("large".into(), String::new())]
            );
            let answer = self.0.clone();
            Box::pin(async move { answer })
        }
    }

    fn ask() -> CanUseToolRequest {
        serde_json::from_value(
            json!({"tool_name": "AskUserQuestion", "tool_use_id": "toolu_q", "input": {"questions": [
            {"question": "Which size?", "header": "Size", "multiSelect": false,
             "options": [{"label": "small", "description": "s"}, {"label": "large"}]}]}}),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn answers_go_back_keyed_by_question_and_no_answer_is_an_error() {
        let activity = Arc::new(TurnActivity::default());
        let shared = nobody();
        let limit = Duration::from_secs(5);
        let refused = answer(&ask(), &shared, &activity, limit).await.unwrap_err();
        assert!(refused.contains("no person"), "{refused}");

        set(&shared, Arc::new(Person(Ok([("Which size?".to_string(), vec!["large".to_string()])].into()))));
        let allowed = answer(&ask(), &shared, &activity, limit).await.unwrap().to_value();
        assert_eq!(allowed["behavior"], "allow", "{allowed}");
        assert_eq!(allowed["updatedInput"]["answers"], json!({"Which size?": "large"}), "{allowed}");
        assert_eq!(allowed["updatedInput"]["questions"][0]["header"], "Size", "the questions stay");
        assert_eq!(activity.people_pending(), 0);

        set(&shared, Arc::new(Person(Err("the question expired".into()))));
        assert_eq!(answer(&ask(), &shared, &activity, limit).await.unwrap_err(), "the question expired");
        set(&shared, Arc::new(Person(Ok(UserAnswers::new()))));
        assert!(answer(&ask(), &shared, &activity, limit).await.unwrap_err().contains("no answer"));
    }
}
