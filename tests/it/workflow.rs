//! A small runner for the GitHub workflows and the action this repository ships: it runs their
//! `run:` steps the way GitHub's runner does (bash -e, the workflow's, job's and step's
//! environment, `GITHUB_OUTPUT`, `GITHUB_PATH`, `GITHUB_STEP_SUMMARY`, `RUNNER_TEMP`), and a step
//! that `uses: toolgate/toolgate@…` runs the composite action in `action.yml` with its inputs.
//! It understands only the expressions these files use, and panics on any other: a change to a
//! workflow that this runner cannot follow fails the test that runs it, instead of passing
//! unexercised.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{repo_root, run};
use serde_json::{Map, Value};

/// What one workflow job left behind.
pub(crate) struct JobRun {
    /// Each step's name (or first line) and exit code, in order; skipped steps are absent, and a
    /// composite action's steps are listed as its own.
    pub steps: Vec<(String, i32)>,
    /// Each step's standard error, in the same order.
    pub stderr: Vec<String>,
    pub summary: String,
    pub temp: tempfile::TempDir,
}

/// How a job is run.
pub(crate) struct Job<'a> {
    /// The repository the job checked out.
    pub repo: &'a Path,
    pub name: &'a str,
    /// The value of each `${{ … }}` the workflow's steps use that is not a step output.
    pub expressions: &'a [(&'a str, &'a str)],
    /// Whether the pull request comes from the repository itself (not a fork).
    pub same_repository: bool,
    /// More environment for every step (where `install-toolgate` finds releases).
    pub environment: &'a [(&'a str, String)],
}

/// The state of one job as its steps run.
struct Runner<'a> {
    job: &'a Job<'a>,
    temp: tempfile::TempDir,
    summary: PathBuf,
    /// Folders earlier steps added with `GITHUB_PATH`, newest first.
    path: Vec<String>,
    steps: Vec<(String, i32)>,
    stderr: Vec<String>,
}

/// The values a step's expressions may read: outputs of the steps before it, in its scope (the
/// job, or one composite action), and the action's inputs.
#[derive(Default)]
struct Scope {
    outputs: Vec<(String, String, String)>, // (step id, name, value)
    inputs: Map<String, Value>,
}

/// Runs job `job.name` of `.github/workflows/contracts.yml` in `job.repo`; a failing step ends
/// the job, as on GitHub.
pub(crate) fn run_job(job: &Job<'_>) -> JobRun {
    let workflow = read_yaml(&job.repo.join(".github/workflows/contracts.yml"));
    let temp = tempfile::tempdir().unwrap();
    let mut runner = Runner {
        job,
        summary: temp.path().join("summary.md"),
        temp,
        path: Vec::new(),
        steps: Vec::new(),
        stderr: Vec::new(),
    };
    let environment = [&workflow["env"], &workflow["jobs"][job.name]["env"]];
    let steps = workflow["jobs"][job.name]["steps"].as_array().unwrap();
    runner.run_steps(steps, &mut Scope::default(), &environment, job.repo);
    JobRun {
        summary: fs::read_to_string(&runner.summary).unwrap_or_default(),
        steps: runner.steps,
        stderr: runner.stderr,
        temp: runner.temp,
    }
}

fn read_yaml(path: &Path) -> Value {
    toolgate_gate::internals::read_strict_yaml(&fs::read_to_string(path).unwrap()).unwrap()
}

impl Runner<'_> {
    /// Runs `steps` in order; false once one failed.
    fn run_steps(
        &mut self,
        steps: &[Value],
        scope: &mut Scope,
        environment: &[&Value],
        directory: &Path,
    ) -> bool {
        for step in steps {
            if let Some(condition) = step["if"].as_str()
                && !self.holds(condition, scope)
            {
                continue;
            }
            let passed = if let Some(action) = step["uses"].as_str() {
                if !action.starts_with("toolgate/toolgate@") {
                    continue; // checkout, upload: the test stands in for them
                }
                self.run_action(step, scope, environment)
            } else {
                self.run_script(step, scope, environment, directory)
            };
            if !passed {
                return false;
            }
        }
        true
    }

    /// The `if:` conditions the workflow and the action use.
    fn holds(&self, condition: &str, scope: &Scope) -> bool {
        match condition {
            "github.event.pull_request.head.repo.full_name == github.repository" => {
                self.job.same_repository
            }
            "always()" => true,
            _ => {
                let (name, value) = condition
                    .strip_prefix("inputs.")
                    .and_then(|rest| rest.split_once(" == "))
                    .unwrap_or_else(|| panic!("the runner does not understand `if: {condition}`"));
                let value = value.trim_matches('\'');
                scope.inputs[name].as_str() == Some(value)
            }
        }
    }

    /// `${{ … }}` in `text`, which must be the whole value.
    fn value_of(&self, text: &str, scope: &Scope) -> String {
        let Some(inner) = text
            .trim()
            .strip_prefix("${{")
            .and_then(|rest| rest.strip_suffix("}}"))
            .map(str::trim)
        else {
            assert!(
                !text.contains("${{"),
                "only whole-value expressions: {text}"
            );
            return text.to_owned();
        };
        if let Some(rest) = inner.strip_prefix("steps.") {
            let (id, name) = rest.split_once(".outputs.").unwrap();
            return scope
                .outputs
                .iter()
                .rev()
                .find(|(step, key, _)| step == id && key == name)
                .map(|(_, _, value)| value.clone())
                .unwrap_or_default();
        }
        if let Some(name) = inner.strip_prefix("inputs.") {
            return scope.inputs[name].as_str().unwrap().to_owned();
        }
        self.job
            .expressions
            .iter()
            .find(|(known, _)| *known == inner)
            .unwrap_or_else(|| panic!("the test gives no value for `{inner}`"))
            .1
            .to_owned()
    }

    /// The composite action in this repository's `action.yml`, with the step's `with:` inputs;
    /// its outputs become the step's.
    fn run_action(&mut self, step: &Value, scope: &mut Scope, environment: &[&Value]) -> bool {
        let action = read_yaml(&repo_root().join("action.yml"));
        assert_eq!(action["runs"]["using"], "composite");
        let given = step["with"].as_object().cloned().unwrap_or_default();
        for name in given.keys() {
            assert!(
                action["inputs"].get(name).is_some(),
                "action.yml has no input `{name}`"
            );
        }
        let mut inner = Scope::default();
        for (name, input) in action["inputs"].as_object().unwrap() {
            let value = match given.get(name) {
                Some(Value::String(text)) => self.value_of(text, scope),
                Some(other) => other.to_string(),
                None => input["default"].as_str().unwrap_or_default().to_owned(),
            };
            inner.inputs.insert(name.clone(), Value::String(value));
        }
        let steps = action["runs"]["steps"].as_array().unwrap();
        let passed = self.run_steps(steps, &mut inner, environment, self.job.repo);
        if let Some(id) = step["id"].as_str() {
            for (name, output) in action["outputs"].as_object().into_iter().flatten() {
                let value = self.value_of(output["value"].as_str().unwrap(), &inner);
                scope.outputs.push((id.to_owned(), name.clone(), value));
            }
        }
        passed
    }

    fn run_script(
        &mut self,
        step: &Value,
        scope: &mut Scope,
        environment: &[&Value],
        directory: &Path,
    ) -> bool {
        let script = step["run"]
            .as_str()
            .expect("a step runs a script or uses an action");
        let output_file = self.temp.path().join("output");
        let path_file = self.temp.path().join("path");
        fs::write(&output_file, "").unwrap();
        fs::write(&path_file, "").unwrap();
        let directory = match step["working-directory"].as_str() {
            Some(relative) => directory.join(self.value_of(relative, scope)),
            None => directory.to_owned(),
        };
        let mut path = self.path.clone();
        path.push(std::env::var("PATH").unwrap_or_default());
        let mut command = Command::new("bash");
        command
            .args(["-e", "-c", script])
            .current_dir(directory)
            .env("PATH", path.join(":"))
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_STEP_SUMMARY", &self.summary)
            .env("GITHUB_ACTION_PATH", repo_root())
            .env("RUNNER_TEMP", self.temp.path())
            .env("NO_COLOR", "1")
            .env_remove("CI");
        for (name, value) in self.job.environment {
            command.env(name, value);
        }
        for env in environment.iter().copied().chain([&step["env"]]) {
            for (name, value) in env.as_object().into_iter().flatten() {
                let value = match value {
                    Value::String(text) => self.value_of(text, scope),
                    other => other.to_string(),
                };
                command.env(name, value);
            }
        }
        let outcome = run(command, b"");
        let name = step["name"].as_str().map_or_else(
            || script.lines().next().unwrap_or_default().to_owned(),
            str::to_owned,
        );
        if let Some(id) = step["id"].as_str() {
            for line in fs::read_to_string(&output_file).unwrap().lines() {
                if let Some((key, value)) = line.split_once('=') {
                    scope
                        .outputs
                        .push((id.to_owned(), key.to_owned(), value.to_owned()));
                }
            }
        }
        for folder in fs::read_to_string(&path_file).unwrap().lines().rev() {
            self.path.insert(0, folder.to_owned());
        }
        self.steps.push((name, outcome.code));
        self.stderr.push(outcome.stderr);
        outcome.code == 0
    }
}

#[test]
fn the_actions_example_args_are_ones_toolgate_test_takes() {
    let action = read_yaml(&repo_root().join("action.yml"));
    let description = action["inputs"]["args"]["description"].as_str().unwrap();
    let examples: Vec<&str> = description
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|example| !example.starts_with("toolgate"))
        .collect();
    assert!(!examples.is_empty(), "{description}");
    let dir = crate::common::tree();
    for example in examples {
        let args: Vec<&str> = example.split_whitespace().collect();
        let outcome = crate::common::toolgate_test(dir.path(), &args, true);
        assert_eq!(
            outcome.code, 0,
            "`toolgate test {example}`: {}{}",
            outcome.stdout, outcome.stderr
        );
    }
}
