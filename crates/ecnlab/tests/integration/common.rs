//! Helpers shared by the integration tests.

use ecnlab::{RunReport, Scenario};
use serde_json::Value;

/// Runs a shipped scenario with overrides.
pub fn run_builtin(name: &str, sets: &[&str]) -> RunReport {
    let text = ecnlab::builtin::scenario(name).expect("shipped scenario");
    run_text(text, sets)
}

pub fn run_text(text: &str, sets: &[&str]) -> RunReport {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::from_toml(text, &sets).expect("valid scenario");
    ecnlab::run(&sc).expect("run completes")
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

pub fn port<'a>(r: &'a RunReport, name: &str) -> &'a Value {
    &r.summary["ports"][name]
}
