//! Where a scenario comes from: the one loader behind `ecnlab-sim SCENARIO` and `ecnlab.run(scenario)`.
//!
//! Both fronts take the same forms (a file, a shipped scenario's name, TOML text, and from Python a dict sent as
//! JSON), so they resolve them here, with the same precedence and the same errors, at the field `scenario` (the
//! CLI renames it to its `SCENARIO` argument).

use super::Scenario;
use crate::builtin;
use crate::error::Error;
use std::path::Path;

/// A scenario's source, as a front end received it.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// What a user typed: an existing file (or directory, which `from_file` rejects by name), else a shipped
    /// scenario's name, else TOML text if it has a `key = value` (a name or a path never holds one that matters:
    /// a missing file is reported as missing, not parsed).
    Auto(&'a str),
    /// A TOML file; its syntax errors name it as `file:line:column`.
    Path(&'a Path),
    /// A shipped scenario (`ecnlab::builtin::SCENARIOS`).
    Name(&'a str),
    /// TOML text.
    Toml(&'a str),
    /// A scenario document as JSON (Python sends a dict this way); values TOML cannot hold are named by field.
    Json(&'a str),
}

impl Scenario {
    /// Loads a scenario from `src`, applies the `path=value` overrides `sets`, and validates it. Errors about the
    /// source itself (no such name, not JSON) are config errors at `scenario`; errors inside the scenario name
    /// its field as `from_toml` does.
    pub fn load(src: &Source, sets: &[String]) -> Result<Scenario, Error> {
        match *src {
            Source::Auto(s) if Path::new(s).exists() => Scenario::from_file(Path::new(s), sets),
            Source::Auto(s) if builtin::scenario(s).is_some() => Scenario::load(&Source::Name(s), sets),
            Source::Auto(s) if s.contains('=') => Scenario::from_toml(s, sets),
            Source::Auto(s) => Err(Error::config(
                "scenario",
                format!("`{s}` is neither a file, a shipped scenario ({}), nor TOML text", names().join(", ")),
            )),
            Source::Path(p) => Scenario::from_file(p, sets),
            Source::Name(n) => match builtin::scenario(n) {
                Some(text) => Scenario::from_toml(text, sets),
                None => Err(Error::config("scenario", format!("no shipped scenario `{n}` ({})", names().join(", ")))),
            },
            Source::Toml(text) => Scenario::from_toml(text, sets),
            Source::Json(text) => {
                let v: serde_json::Value =
                    serde_json::from_str(text).map_err(|e| Error::config("scenario", e.to_string()))?;
                let doc = json_to_toml(v, &mut vec![])?;
                let text = toml::to_string(&doc).map_err(|e| Error::config("scenario", e.to_string()))?;
                Scenario::from_toml(&text, sets)
            }
        }
    }
}

fn names() -> Vec<&'static str> {
    builtin::SCENARIOS.iter().map(|(n, _)| *n).collect()
}

/// A JSON document as TOML, naming the field of any value TOML cannot hold. `toml::Value::try_from` stops at the
/// first such value (a null, an integer above 2^63 − 1) with a bare "unsupported unit type" and no path: the
/// scenario's field paths (`topology.rate`) would be lost before validation could name them.
fn json_to_toml(v: serde_json::Value, path: &mut Vec<String>) -> Result<toml::Value, Error> {
    use serde_json::Value as J;
    let here = |path: &[String]| path.join(".");
    Ok(match v {
        J::Null => return Err(Error::config(here(path), "None is not a value: leave the field out for its default")),
        J::Bool(b) => toml::Value::Boolean(b),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(_)) if n.is_u64() => {
                return Err(Error::config(here(path), format!("{n} is out of range: TOML integers end at 2^63 − 1")))
            }
            (None, Some(x)) => toml::Value::Float(x),
            (None, None) => return Err(Error::config(here(path), format!("{n}: not a number TOML can hold"))),
        },
        J::String(s) => toml::Value::String(s),
        J::Array(a) => {
            let mut out = Vec::with_capacity(a.len());
            for (i, x) in a.into_iter().enumerate() {
                path.push(i.to_string());
                out.push(json_to_toml(x, path)?);
                path.pop();
            }
            toml::Value::Array(out)
        }
        J::Object(o) => {
            let mut out = toml::Table::new();
            for (k, x) in o {
                path.push(k.clone());
                out.insert(k, json_to_toml(x, path)?);
                path.pop();
            }
            toml::Value::Table(out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(r: Result<Scenario, Error>) -> String {
        match r {
            Err(Error::Config { path, .. }) => path,
            other => panic!("want a config error, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn every_form_of_the_same_scenario_loads_alike() {
        let text = builtin::scenario("dctcp-8flows").unwrap();
        let sets = vec!["seed=3".to_string()];
        let want = Scenario::load(&Source::Name("dctcp-8flows"), &sets).unwrap().to_toml();
        let json = serde_json::to_string(&toml::from_str::<toml::Value>(text).unwrap()).unwrap();
        for src in [Source::Auto("dctcp-8flows"), Source::Auto(text), Source::Toml(text), Source::Json(&json)] {
            assert_eq!(Scenario::load(&src, &sets).unwrap().to_toml(), want, "{src:?}");
        }
    }

    #[test]
    fn a_source_that_is_no_scenario_is_an_error_at_scenario() {
        assert_eq!(field(Scenario::load(&Source::Auto("no-such-scenario"), &[])), "scenario");
        assert_eq!(field(Scenario::load(&Source::Name("no-such-scenario"), &[])), "scenario");
        assert_eq!(field(Scenario::load(&Source::Json("{"), &[])), "scenario");
        // A value TOML cannot hold keeps its field.
        assert_eq!(field(Scenario::load(&Source::Json(r#"{"topology": {"rate": null}}"#), &[])), "topology.rate");
        assert_eq!(field(Scenario::load(&Source::Json(r#"{"duration": 9223372036854775808}"#), &[])), "duration");
    }
}
