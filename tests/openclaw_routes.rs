//! Routes, auth and the README's configuration on the real OpenClaw (openclaw 2026.9.6, issue #12
//! points 1, 2 and 9): the stock `openai` and `anthropic` provider ids select the clawbridge
//! harnesses, the auth OpenClaw prepared for the route reaches the native runtime (or the native
//! login is used, when the harness owns auth), a failing endpoint shows as retry progress and a
//! failure that names the cause, and the README's OpenClaw configuration, copied verbatim, runs.

mod common;

use std::path::{Path, PathBuf};

use clawbridge_fixtures::peers::claude::MARKER as CLAUDE_MARKER;
use clawbridge_fixtures::peers::codex::{MARKER as CODEX_MARKER, command_mock};
use clawbridge_fixtures::peers::openclaw::{Harness, TempRootGuard};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, peer_or_skip, start_mock};
use common::openclaw::{OpenClawPeers, assert_exec_ok, bridge_bin, describe_exec};
use serde_json::{Value, json};

/// A key OpenClaw holds for the route; it must reach the native runtime and nothing on disk.
const ROUTE_KEY: &str = "sk-openclaw-route-canary-7f3a";
/// A stock `anthropic` model of openclaw 2026.9.6's catalog.
const ANTHROPIC_MODEL: &str = "anthropic/claude-sonnet-4-6";
/// A stock `openai` model of openclaw 2026.9.6's catalog.
const OPENAI_MODEL: &str = "openai/gpt-5.5";

/// The plugin's config object inside `config`.
fn plugin_config(config: &mut Value) -> &mut Value {
    &mut config["plugins"]["entries"]["clawbridge"]["config"]
}

/// Points the default model at `model` with `harness` as its runtime, replacing the mock provider.
fn use_model(config: &mut Value, model: &str, harness: &str) {
    config["agents"]["defaults"]["model"] = json!({"primary": model});
    config["agents"]["defaults"]["models"] = json!({model: {"agentRuntime": {"id": harness}}});
    config["models"]["providers"] = json!({});
}

/// The bridge's session bindings under `state_dir` (`serve/bindings/*.json`).
fn bindings(state_dir: &Path) -> Vec<Value> {
    std::fs::read_dir(state_dir.join("serve/bindings"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect()
}

/// Every file under `dir` that holds `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path).is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle)) {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_on_the_stock_anthropic_provider_runs_a_turn_with_the_route_auth_openclaw_prepared() {
    let Some((claude, peers)) = OpenClawPeers::with_peer("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&json!({"default": {"text": format!("Routed: {CLAUDE_MARKER}")}})).await.unwrap();
    let run = peers.home(&sandbox, Harness::Claude(claude), &mock);
    let mut config = run.config();
    use_model(&mut config, ANTHROPIC_MODEL, "clawbridge-claude");
    // The endpoint and key are OpenClaw's, on its stock provider; the bridge has neither.
    config["models"]["providers"]["anthropic"] = json!({"baseUrl": mock.base_url(), "apiKey": ROUTE_KEY, "models": []});
    let env = &mut plugin_config(&mut config)["env"];
    for name in ["ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"] {
        env.as_object_mut().unwrap().remove(name);
    }
    env["CLAWBRIDGE_LOG"] = json!("trace");
    plugin_config(&mut config)["auth"] = json!({"clawbridge-claude": "host"});
    run.write_config(&config);
    let _temp_root = TempRootGuard::snapshot();

    let exec = run.exec("Say something routed.", &[]).await;
    let describe = || describe_exec(&exec, &mock);
    assert_exec_ok(&exec, &mock);
    assert!(exec["final"].as_str().unwrap_or("").contains(CLAUDE_MARKER), "{}", describe());
    // The harness ran it: the bridge bound the OpenClaw session to a Claude session of that model.
    let bound = bindings(&run.bridge_state);
    assert_eq!(bound.len(), 1, "{bound:?}");
    assert_eq!(bound[0]["model"], "claude-sonnet-4-6", "{bound:?}");
    assert!(bound[0]["nativeSessionId"].as_str().is_some_and(|id| !id.is_empty()), "{bound:?}");
    // The CLI reached the route's endpoint with a key: the bridge's environment had neither.
    let requests = mock.model_requests();
    assert!(!requests.is_empty(), "{}", describe());
    assert!(requests.iter().all(|r| r.headers.contains_key("x-api-key")), "{}", describe());
    // The key travelled, and stayed out of every file of the bridge's state dir (its log included).
    let log = std::fs::read_to_string(run.bridge_state.join("logs/clawbridge.log")).expect("the bridge's log file");
    assert!(log.contains("host connected") && log.contains("DEBUG"), "the log file holds the verbose log: {log}");
    assert_eq!(files_containing(&run.bridge_state, ROUTE_KEY), Vec::<PathBuf>::new());
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_on_the_stock_openai_provider_runs_a_turn_with_its_own_login_when_it_owns_auth() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&command_mock(false)).await.unwrap();
    // OpenClawHome writes Codex's own config (CODEX_HOME/config.toml → the mock): its native login.
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    let mut config = run.config();
    use_model(&mut config, OPENAI_MODEL, "clawbridge-codex");
    plugin_config(&mut config)["auth"] = json!({"clawbridge-codex": "harness"});
    // OpenClaw 2026.9.6 demands an OpenAI credential before it dispatches a stock openai route to
    // any harness but one whose id is `codex` (docs/peers/openclaw.md#auth); with auth "harness"
    // this one is never forwarded, and Codex authenticates as its own config says.
    config["models"]["providers"]["openai"] = json!({"apiKey": ROUTE_KEY, "models": []});
    run.write_config(&config);
    let _temp_root = TempRootGuard::snapshot();

    // The stock provider's route facts (compatibleIds [openclaw, codex]) admit clawbridge-codex.
    let exec = run.exec("Please run the live test command.", &[]).await;
    let describe = || describe_exec(&exec, &mock);
    assert_exec_ok(&exec, &mock);
    assert!(exec["final"].as_str().unwrap_or("").contains(CODEX_MARKER), "{}", describe());
    assert_eq!(exec["provider"], "openai", "{}", describe());
    run.bound_native_session();
    // Codex asked for the model OpenClaw selected, through its own provider.
    let requests = mock.model_requests();
    assert!(!requests.is_empty() && requests.iter().all(|r| r.body["model"] == "gpt-5.5"), "{}", describe());
    // Codex's own provider sends no key; OpenClaw's was not forwarded as well.
    assert!(requests.iter().all(|r| !r.headers.contains_key("authorization")), "{}", describe());
    assert_eq!(files_containing(&run.bridge_state, ROUTE_KEY), Vec::<PathBuf>::new());
    run.wait_until_gone().await;
}

/// A custom provider whose route OpenClaw prepares (the Responses API at the mock, a key), for Codex
/// with host auth. The stock `openai` provider routes only to OpenAI's own endpoints, which a test
/// cannot reach; a provider without route facts is the one OpenClaw lets point anywhere.
fn route_provider(mock_url: &str) -> Value {
    json!({"baseUrl": format!("{mock_url}/v1"), "apiKey": ROUTE_KEY, "api": "openai-responses",
           "models": [{"id": "route-model", "name": "Route", "reasoning": false, "input": ["text"],
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                       "contextWindow": 128000, "maxTokens": 4096}]})
}

/// Codex's own config without a model provider: only the route OpenClaw prepared can reach the mock.
fn codex_config_without_a_provider(sandbox: &Sandbox) {
    let path = sandbox.codex_home().join("config.toml");
    let own = std::fs::read_to_string(&path).unwrap();
    let kept: Vec<&str> =
        own.lines().filter(|l| !l.starts_with("model_provider") && !l.starts_with("model =")).collect();
    let cut = kept.iter().position(|l| l.starts_with("[model_providers.")).unwrap_or(kept.len());
    let rest: Vec<&str> = kept[cut..].iter().copied().skip_while(|l| !l.starts_with("[analytics]")).collect();
    std::fs::write(&path, [&kept[..cut], &rest[..]].concat().join("\n")).unwrap();
}

/// [`command_mock`] whose command also prints the route's key variable, as the agent's commands see it.
fn command_printing_the_route_key() -> Value {
    let mut mock = command_mock(false);
    mock["rules"][1]["reply"]["run_command"]["command"] =
        json!("echo live-$((6*7)) \"route key: [${CLAWBRIDGE_ROUTE_API_KEY-unset}]\"");
    mock
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_with_host_auth_talks_to_the_endpoint_and_key_openclaw_prepared() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&command_printing_the_route_key()).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    codex_config_without_a_provider(&sandbox);
    let mut config = run.config();
    use_model(&mut config, "route/route-model", "clawbridge-codex");
    config["models"]["providers"]["route"] = route_provider(&mock.base_url());
    plugin_config(&mut config)["env"]["CLAWBRIDGE_LOG"] = json!("trace");
    plugin_config(&mut config)["auth"] = json!({"clawbridge-codex": "host"});
    run.write_config(&config);
    let _temp_root = TempRootGuard::snapshot();

    let exec = run.exec("Please run the live test command.", &[]).await;
    let describe = || describe_exec(&exec, &mock);
    assert_exec_ok(&exec, &mock);
    assert!(exec["final"].as_str().unwrap_or("").contains(CODEX_MARKER), "{}", describe());
    run.bound_native_session();
    let requests = mock.model_requests();
    assert!(!requests.is_empty(), "{}", describe());
    assert!(requests.iter().all(|r| r.headers.contains_key("authorization")), "{}", describe());
    assert!(requests.iter().all(|r| r.body["model"] == "route-model"), "{}", describe());
    // The key is Codex's, not the agent's: its command saw the variable emptied, and no request
    // body (the command's output went back to the model) holds the key.
    assert!(exec["final"].as_str().unwrap_or("").contains("route key: []"), "{}", describe());
    assert!(requests.iter().all(|r| !r.body.to_string().contains(ROUTE_KEY)), "{}", describe());
    assert_eq!(files_containing(&run.bridge_state, ROUTE_KEY), Vec::<PathBuf>::new());
    // Neither a config nor a shell snapshot of the environment (docs/peers/codex.md#route-auth).
    assert_eq!(
        files_containing(&sandbox.codex_home(), ROUTE_KEY),
        Vec::<PathBuf>::new(),
        "nothing in CODEX_HOME holds the key"
    );
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_whose_endpoint_fails_shows_retry_progress_and_a_failure_naming_the_cause() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let outage = json!({"default": {"error": {"status": 500, "message": "scripted outage", "in_stream": true}}});
    let mock = start_mock(&outage).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    codex_config_without_a_provider(&sandbox);
    let mut config = run.config();
    use_model(&mut config, "route/route-model", "clawbridge-codex");
    config["models"]["providers"]["route"] = route_provider(&mock.base_url());
    plugin_config(&mut config)["auth"] = json!({"clawbridge-codex": "host"});
    run.write_config(&config);
    let _temp_root = TempRootGuard::snapshot();

    // A short deadline: OpenClaw itself retries the attempt within it (docs/peers/openclaw.md#auth).
    let config_path = run.config_path.display().to_string();
    let state = run.state.display().to_string();
    let cwd = sandbox.work().display().to_string();
    let args = ["agent", "exec", "--config", &config_path, "--state-dir", &state, "--cwd", &cwd, "--json"];
    let (status, stdout, stderr) = run.output(&[&args[..], &["--timeout", "20", "Say hello."]].concat()).await;
    let describe = || {
        format!("{status}\nstdout:\n{stdout}\nstderr:\n{stderr}\nmock saw:\n{}", describe_requests(&mock.requests()))
    };
    assert!(!status.success(), "{}", describe());
    let exec = clawbridge_fixtures::peers::openclaw::parse_json_output(&stdout).unwrap_or_default();
    assert_eq!(exec["ok"], false, "{}", describe());
    // The failure names the cause, not only a deadline.
    let error = exec["error"]["message"].as_str().unwrap_or_default();
    assert!(error.contains("scripted outage"), "{}", describe());
    // Each of Codex's own retries reached the host while the turn ran (its log, through the plugin).
    for retry in 1..=5 {
        let line = format!("the model request failed and is retried (retry {retry}): Reconnecting... {retry}/5");
        assert!(stderr.contains(&line), "{line} in\n{}", describe());
    }
    // Codex's five retries, and no more: the result told OpenClaw the retrying was done
    // (providerRetryMaxRetries 0), so it did not run the whole turn again.
    assert_eq!(mock.model_requests().len(), 6, "{}", describe());
    assert!(!stderr.contains("transient same-model retry"), "{}", describe());
    run.wait_until_gone().await;
}

/// The OpenClaw configuration block of README.md (between its `openclaw-config` markers).
fn readme_config() -> String {
    let readme = std::fs::read_to_string(clawbridge_fixtures::peers::repo_root().join("README.md")).unwrap();
    let start = readme.find("<!-- openclaw-config:begin -->").expect("README marks its OpenClaw configuration");
    let end = readme.find("<!-- openclaw-config:end -->").expect("and where it ends");
    let block = &readme[start..end];
    let body = block.split_once("```json\n").expect("a json block").1;
    body.rsplit_once("```").expect("a closed block").0.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_configuration_copied_verbatim_runs_claude_codex_and_a_second_turn() {
    let Some(claude) = peer_or_skip("claude") else { return };
    let Some(codex) = peer_or_skip("codex") else { return };
    let Some(peers) = OpenClawPeers::or_skip() else { return };
    let sandbox = Sandbox::new().unwrap();
    let mut scenario = command_mock(false);
    scenario["default"] = json!({"text": format!("Answered: {CLAUDE_MARKER}")});
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Claude(claude.clone()), &mock);

    // Only the placeholders the README names, and the anthropic endpoint pointed at the mock.
    let text = readme_config()
        .replace("<clawbridge checkout>", &clawbridge_fixtures::peers::repo_root().display().to_string())
        .replace("<clawbridge binary>", &bridge_bin().display().to_string())
        .replace("<claude binary>", &claude.display().to_string())
        .replace("<codex binary>", &codex.display().to_string())
        .replace("<Anthropic API key>", ROUTE_KEY)
        .replace("<OpenAI API key>", "sk-openai-unused")
        .replace("https://api.anthropic.com", &mock.base_url());
    assert!(!text.contains('<'), "a placeholder the test does not know: {text}");
    let config: Value = serde_json::from_str(&text).expect("the README's configuration is JSON");
    run.write_config(&config);
    // Codex with auth "harness" uses its own login and config: here, ~/.codex pointing at the mock.
    let codex_home = sandbox.home().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(codex_home.join("config.toml"), clawbridge_fixtures::peers::codex::config_toml(&mock)).unwrap();
    let _temp_root = TempRootGuard::snapshot();

    // A Claude turn on the default model.
    let first = run.exec("Say something.", &[]).await;
    let describe = |exec: &Value| describe_exec(exec, &mock);
    assert_exec_ok(&first, &mock);
    assert!(first["final"].as_str().unwrap_or("").contains(CLAUDE_MARKER), "{}", describe(&first));
    assert_eq!(first["provider"], "anthropic");
    let session = first["sessionId"].as_str().expect("a session id").to_string();
    let claude_requests = mock.model_requests().iter().filter(|r| r.route() == "/v1/messages").count();
    assert!(claude_requests > 0, "{}", describe(&first));

    // The next turn of that session, as the README says to run it.
    let second = run.next_turn(&session, "Say something again.").await;
    assert_eq!(second["meta"]["agentMeta"]["agentHarnessId"], "clawbridge-claude", "{second:#}");
    assert_eq!(second["meta"]["agentMeta"]["sessionId"], session.as_str(), "{second:#}");

    // A Codex turn on the other model of the same configuration.
    let codex_turn = run.exec("Please run the live test command.", &["--model", OPENAI_MODEL]).await;
    assert_exec_ok(&codex_turn, &mock);
    assert!(codex_turn["final"].as_str().unwrap_or("").contains(CODEX_MARKER), "{}", describe(&codex_turn));

    // The bridge used the README's default state dir, and logged there.
    let state = sandbox.home().join(".local/state/clawbridge");
    assert!(state.join("logs/clawbridge.log").is_file(), "{}", state.display());
    let mut models: Vec<String> =
        bindings(&state).iter().filter_map(|b| b["model"].as_str().map(str::to_owned)).collect();
    models.sort();
    assert_eq!(models, ["claude-sonnet-4-6", "gpt-5.5"], "one bound session per harness");
    assert_eq!(files_containing(&state, ROUTE_KEY), Vec::<PathBuf>::new());
    let home = format!("HOME={}\0", sandbox.home().display());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !clawbridge_fixtures::peers::openclaw::processes_with_env(&home).is_empty() {
        assert!(std::time::Instant::now() < deadline, "processes outlived OpenClaw");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
