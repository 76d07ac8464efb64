//! The Helm chart (`deploy/helm/tlslab`) as `helm` itself sees it: `helm lint`, and the
//! manifests `helm template` renders, read back and checked for what the agents depend on: an
//! Indexed Job of one pod per agent, each pod's shard its own completion index, the store's URL
//! from a Secret, resources requested, and the lab server only when asked for.
//!
//! Needs the `helm` program (`go install helm.sh/helm/v3/cmd/helm@v3.22.0`, as `.ci/run`
//! does); without it the tests print why and pass, unless `TLSLAB_REQUIRE_HELM` is set (CI).

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::Deserialize;
use serde_json::Value;
use support::*;

/// The chart, from this crate's directory.
fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/helm/tlslab")
}

/// The `helm` program: on PATH, else where `go install` puts it; `None` (saying why) when it
/// is not installed and CI does not require it.
fn helm() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("helm"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(gobin) = std::env::var_os("GOBIN") {
        candidates.push(PathBuf::from(gobin).join("helm"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join("go/bin/helm"));
    }
    if let Some(found) = candidates.into_iter().find(|path| path.is_file()) {
        return Some(found);
    }
    let why = "helm is not installed (go install helm.sh/helm/v3/cmd/helm@v3.22.0)";
    assert!(
        std::env::var_os("TLSLAB_REQUIRE_HELM").is_none(),
        "TLSLAB_REQUIRE_HELM is set but {why}"
    );
    eprintln!("skipped: {why}");
    None
}

/// `helm ARGUMENTS`, with Helm's homes in the tests' scratch space (no repositories or plugins
/// of the developer's leak in; helm makes the directories it writes).
fn run_helm(helm: &Path, arguments: &[&str]) -> Output {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("helm-home");
    Command::new(helm)
        .args(arguments)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("helm runs")
}

/// `--set NAME=VALUE` for each value.
fn set_values(values: &[(&str, &str)]) -> Vec<String> {
    values
        .iter()
        .flat_map(|(name, value)| ["--set".to_string(), format!("{name}={value}")])
        .collect()
}

/// The manifests `helm template` renders with `values`, each document as JSON (for indexing).
fn render(helm: &Path, values: &[(&str, &str)]) -> Vec<Value> {
    let chart = chart();
    let mut arguments = vec![
        "template".to_string(),
        "lab".to_string(),
        chart.display().to_string(),
    ];
    arguments.extend(set_values(values));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let output = run_helm(helm, &arguments);
    let yaml = assert_success(&output);
    serde_yaml::Deserializer::from_str(&yaml)
        .map(|document| Value::deserialize(document).expect("helm renders YAML"))
        .filter(|document| !document.is_null())
        .collect()
}

/// The one manifest of `kind`, failing unless there is exactly one.
fn one<'a>(manifests: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = manifests.iter().filter(|m| m["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "{kind}s rendered: {manifests:#?}");
    found[0]
}

fn kinds(manifests: &[Value]) -> Vec<&str> {
    manifests
        .iter()
        .map(|m| m["kind"].as_str().unwrap_or("?"))
        .collect()
}

/// The pod template's one container.
fn container(workload: &Value) -> &Value {
    let containers = workload["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("a pod template with containers");
    assert_eq!(containers.len(), 1, "{workload:#}");
    &containers[0]
}

/// The container's variable `name`, as declared.
fn variable<'a>(container: &'a Value, name: &str) -> &'a Value {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|variable| variable["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {container:#}"))
}

/// The container's arguments as the kubelet gives them to the pod of completion index
/// `index`: each `$(NAME)` replaced by the variable's value, where the variable is a literal
/// or the Job's completion-index annotation (what Kubernetes sets on an Indexed Job's pods).
fn arguments_of_pod(container: &Value, index: usize) -> Vec<String> {
    let mut values: Vec<(String, String)> = Vec::new();
    for variable in container["env"].as_array().into_iter().flatten() {
        let name = variable["name"].as_str().unwrap().to_string();
        if let Some(value) = variable["value"].as_str() {
            values.push((name, value.to_string()));
        } else if variable["valueFrom"]["fieldRef"]["fieldPath"]
            == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        {
            values.push((name, index.to_string()));
        }
    }
    container["args"]
        .as_array()
        .expect("the container has args")
        .iter()
        .map(|argument| {
            let mut argument = argument.as_str().expect("string args").to_string();
            for (name, value) in &values {
                argument = argument.replace(&format!("$({name})"), value);
            }
            argument
        })
        .collect()
}

/// The value after `option` in `arguments`.
fn option_value<'a>(arguments: &'a [String], option: &str) -> &'a str {
    let at = arguments
        .iter()
        .position(|argument| argument == option)
        .unwrap_or_else(|| panic!("no {option} in {arguments:?}"));
    arguments
        .get(at + 1)
        .unwrap_or_else(|| panic!("{option} without a value"))
}

/// Resource requests and limits of both CPU and memory.
fn assert_resources(container: &Value) {
    for side in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            let value = &container["resources"][side][resource];
            assert!(
                value.is_string() || value.is_number(),
                "no {side}.{resource} in {container:#}"
            );
        }
    }
}

/// No capability added, every one dropped, no privilege escalation, not root.
fn assert_unprivileged(workload: &Value) {
    let pod = &workload["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(pod["runAsNonRoot"], true, "{pod:#}");
    let context = &container(workload)["securityContext"];
    assert_eq!(context["allowPrivilegeEscalation"], false, "{context:#}");
    assert_eq!(context["capabilities"]["drop"][0], "ALL", "{context:#}");
    assert!(context["capabilities"]["add"].is_null(), "{context:#}");
}

const STORE_SECRET: (&str, &str) = ("store.existingSecret", "tlslab-store");

#[test]
fn the_chart_passes_helm_lint() {
    let Some(helm) = helm() else { return };
    let chart = chart().display().to_string();
    for values in [
        vec![("run", "7"), STORE_SECRET],
        vec![
            ("run", "7"),
            ("store.url", "postgres://lab:secret@db:5432/tlslab"),
            ("labServer.enabled", "true"),
            ("agents", "50"),
        ],
    ] {
        let mut arguments = vec!["lint".to_string(), "--strict".to_string(), chart.clone()];
        arguments.extend(set_values(&values));
        let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
        let output = run_helm(&helm, &arguments);
        let text = assert_success(&output);
        assert!(text.contains("0 chart(s) failed"), "{text}");
    }
}

#[test]
fn the_agents_are_an_indexed_job_whose_pods_get_distinct_shards() {
    let Some(helm) = helm() else { return };
    for agents in [3_usize, 8] {
        let manifests = render(
            &helm,
            &[("run", "42"), ("agents", &agents.to_string()), STORE_SECRET],
        );
        let job = one(&manifests, "Job");
        assert_eq!(job["apiVersion"], "batch/v1");
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed", "{job:#}");
        assert_eq!(spec["completions"], agents, "{job:#}");
        assert_eq!(spec["parallelism"], agents, "{job:#}");
        // A failed pod is replaced under its own index (its shard joins again), not
        // restarted in place.
        assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");

        let agent = container(job);
        let shards: BTreeSet<String> = (0..agents)
            .map(|index| {
                let arguments = arguments_of_pod(agent, index);
                assert_eq!(arguments[0], "agent", "{arguments:?}");
                assert_eq!(option_value(&arguments, "--run"), "42", "{arguments:?}");
                option_value(&arguments, "--shard").to_string()
            })
            .collect();
        let expected: BTreeSet<String> = (0..agents).map(|i| format!("{i}/{agents}")).collect();
        assert_eq!(shards, expected, "each pod its own shard of {agents}");
        assert_unprivileged(job);
    }
}

#[test]
fn the_store_url_comes_from_a_secret_and_never_from_the_command_line() {
    let Some(helm) = helm() else { return };

    // An existing Secret: named, and no Secret of the chart's own.
    let manifests = render(&helm, &[("run", "1"), STORE_SECRET]);
    assert!(!kinds(&manifests).contains(&"Secret"), "{manifests:#?}");
    let store = variable(container(one(&manifests, "Job")), "TLSLAB_STORE");
    let reference = &store["valueFrom"]["secretKeyRef"];
    assert_eq!(reference["name"], "tlslab-store", "{store:#}");
    assert_eq!(reference["key"], "url", "{store:#}");

    // A URL in the values: the chart's Secret holds it, and the Job refers to that Secret.
    let url = "postgres://lab:s3cret-password@db.example:5432/tlslab";
    let manifests = render(
        &helm,
        &[("run", "1"), ("store.url", url), ("store.secretKey", "dsn")],
    );
    let secret = one(&manifests, "Secret");
    assert_eq!(secret["stringData"]["dsn"], url, "{secret:#}");
    let job = one(&manifests, "Job");
    let store = variable(container(job), "TLSLAB_STORE");
    let reference = &store["valueFrom"]["secretKeyRef"];
    assert_eq!(reference["name"], secret["metadata"]["name"], "{store:#}");
    assert_eq!(reference["key"], "dsn", "{store:#}");
    assert!(
        !job.to_string().contains("s3cret-password"),
        "the password is in the Job: {job:#}"
    );
}

#[test]
fn resources_are_requested_and_limited_for_agents_and_lab_server() {
    let Some(helm) = helm() else { return };
    let manifests = render(
        &helm,
        &[("run", "3"), STORE_SECRET, ("labServer.enabled", "true")],
    );
    assert_resources(container(one(&manifests, "Job")));
    let lab = one(&manifests, "Deployment");
    assert_resources(container(lab));
    assert_unprivileged(lab);

    // Values reach the manifests.
    let manifests = render(
        &helm,
        &[
            ("run", "3"),
            STORE_SECRET,
            ("agent.resources.requests.cpu", "1500m"),
            ("agent.resources.limits.memory", "2Gi"),
        ],
    );
    let resources = &container(one(&manifests, "Job"))["resources"];
    assert_eq!(resources["requests"]["cpu"], "1500m", "{resources:#}");
    assert_eq!(resources["limits"]["memory"], "2Gi", "{resources:#}");
}

#[test]
fn the_lab_server_is_rendered_only_when_enabled() {
    let Some(helm) = helm() else { return };
    let manifests = render(&helm, &[("run", "5"), STORE_SECRET]);
    assert_eq!(kinds(&manifests), ["Job"], "{manifests:#?}");

    let manifests = render(
        &helm,
        &[
            ("run", "5"),
            STORE_SECRET,
            ("labServer.enabled", "true"),
            ("labServer.port", "9443"),
        ],
    );
    let mut found = kinds(&manifests);
    found.sort();
    assert_eq!(found, ["Deployment", "Job", "Service"], "{manifests:#?}");
    let deployment = one(&manifests, "Deployment");
    let server = container(deployment);
    let arguments: Vec<&str> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(arguments[..3], ["serve", "--listen", "0.0.0.0:9443"]);
    let https = server["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|port| port["name"] == "https")
        .expect("an https port");
    assert_eq!(https["containerPort"], 9443);

    // The Service reaches the Deployment's pods on that port.
    let service = one(&manifests, "Service");
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let selector = service["spec"]["selector"].as_object().unwrap();
    assert!(!selector.is_empty());
    for (name, value) in selector {
        assert_eq!(&labels[name], value, "selector {name} misses the pods");
    }
    let port = &service["spec"]["ports"][0];
    assert_eq!(port["port"], 9443, "{service:#}");
    assert_eq!(port["targetPort"], "https", "{service:#}");
    // The agents' pods are not the lab server's.
    let agent_labels = &one(&manifests, "Job")["spec"]["template"]["metadata"]["labels"];
    assert!(
        selector
            .iter()
            .any(|(name, value)| &agent_labels[name] != value),
        "the Service selects the agents too"
    );

    // A release of the lab server alone, which outlives the runs: no run or store needed.
    let manifests = render(
        &helm,
        &[("labServer.enabled", "true"), ("agent.enabled", "false")],
    );
    let mut found = kinds(&manifests);
    found.sort();
    assert_eq!(found, ["Deployment", "Service"], "{manifests:#?}");
}

#[test]
fn a_missing_run_or_store_is_refused_with_what_to_give() {
    let Some(helm) = helm() else { return };
    let chart = chart().display().to_string();
    for (values, mentions) in [
        (vec![STORE_SECRET], "run is required"),
        (vec![("run", "latest"), STORE_SECRET], "not a run number"),
        (
            vec![("run", "9")],
            "store.existingSecret or store.url is required",
        ),
        (
            vec![("run", "9"), STORE_SECRET, ("agents", "0")],
            "agents must be at least 1",
        ),
    ] {
        let mut arguments = vec!["template".to_string(), "lab".to_string(), chart.clone()];
        arguments.extend(set_values(&values));
        let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
        let output = run_helm(&helm, &arguments);
        assert!(!output.status.success(), "{values:?} rendered");
        assert!(stderr(&output).contains(mentions), "{}", stderr(&output));
    }
}
