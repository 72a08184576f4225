//! Every shipped experiment at `--quick` scale: its checks (the papers' claims, in direction form) hold.

use ecnlab::experiment::{self, registry, Options, ScaleKind};

fn quick(id: &str) {
    let out = std::env::temp_dir().join(format!("ecnlab-quick-{id}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let opts = Options { jobs: 2, ..Options::new(ScaleKind::Quick, out.clone()) };
    let o = experiment::reproduce(id, &opts).unwrap_or_else(|e| panic!("{id}: {e}"));
    let failed: Vec<String> = o
        .checks
        .iter()
        .filter(|c| !c.pass)
        .map(|c| {
            format!(
                "{}: {}",
                c.name,
                c.rows.iter().map(|r| format!("[{}] {}", r.at, r.measured)).collect::<Vec<_>>().join("; ")
            )
        })
        .collect();
    assert!(failed.is_empty(), "{id} failed checks:\n{}", failed.join("\n"));
    for f in ["table.csv", "check.json", "check.md"] {
        assert!(out.join(f).exists(), "{id}: {f} missing");
    }
    // Every magnitude claim evaluates on the quick table: a finite number, unless the point it names is not run
    // at quick scale. Whether it matches the paper is not asserted: quick is not the paper's scale.
    let def = registry::get(id).unwrap();
    assert_eq!(o.magnitudes.len(), def.magnitude.len(), "{id}");
    for m in &o.magnitudes {
        let missing = m.note.as_deref().is_some_and(|n| n.contains("no run matches"));
        assert!(
            m.ecnlab.is_some_and(f64::is_finite) || missing,
            "{id}: magnitude `{}`: {:?} ({:?})",
            m.name,
            m.ecnlab,
            m.note
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("check.json")).unwrap()).unwrap();
    assert_eq!(json["verdict"], o.verdict(), "{id}");
    assert_eq!(json["magnitudes"].as_array().map(|a| a.len()), Some(def.magnitude.len()), "{id}");
    // A definition's notes (the evidence for a remaining gap) reach both reports.
    if let Some(n) = &def.notes {
        assert_eq!(json["notes"].as_str(), Some(n.trim()), "{id}");
        let md = std::fs::read_to_string(out.join("check.md")).unwrap();
        assert!(md.contains(n.trim()), "{id}: check.md lacks the definition's notes");
    }
    let _ = std::fs::remove_dir_all(&out);
}

macro_rules! quick_tests {
    ($($name:ident => $id:literal),* $(,)?) => {
        $(#[test] fn $name() { quick($id); })*

        #[test]
        fn every_registered_experiment_has_a_quick_test() {
            let tested = [$($id),*];
            for id in registry::ids() {
                assert!(tested.contains(&id), "{id} has no quick test");
            }
        }
    };
}

quick_tests! {
    ecnstar_table1 => "ecnstar-table1",
    ecnstar_fig2 => "ecnstar-fig2",
    ecnstar_fig4 => "ecnstar-fig4",
    ecnstar_fig5_8 => "ecnstar-fig5-8",
    ecnstar_fig9 => "ecnstar-fig9",
    ecnstar_fig10_11 => "ecnstar-fig10-11",
    ecnstar_fig12 => "ecnstar-fig12",
    pmsb_fig1 => "pmsb-fig1",
    pmsb_fig2 => "pmsb-fig2",
    pmsb_fig3 => "pmsb-fig3",
    pmsb_fig4_5 => "pmsb-fig4-5",
    pmsb_fig6_7 => "pmsb-fig6-7",
    pmsb_fig8_10 => "pmsb-fig8-10",
    pmsb_fig11_12 => "pmsb-fig11-12",
    pmsb_fig13 => "pmsb-fig13",
    pmsb_fig14 => "pmsb-fig14",
    pmsb_fig15 => "pmsb-fig15",
    pmsb_ls_dwrr => "pmsb-ls-dwrr",
    pmsb_ls_wfq => "pmsb-ls-wfq",
    mqecn_fig1 => "mqecn-fig1",
    mqecn_fig2 => "mqecn-fig2",
    mqecn_fig3 => "mqecn-fig3",
    mqecn_fig6 => "mqecn-fig6",
    mqecn_fig7_8 => "mqecn-fig7-8",
    mqecn_ls => "mqecn-ls",
    mqecn_ls_32q => "mqecn-ls-32q",
    mqecn_ls_ecnstar => "mqecn-ls-ecnstar",
    mqecn_ls_params => "mqecn-ls-params",
    ecnsharp_fig9_10 => "ecnsharp-fig9-10",
    ecnsharp_fig2_3 => "ecnsharp-fig2-3",
    ecnsharp_fig11 => "ecnsharp-fig11",
    ecnsharp_fig21 => "ecnsharp-fig21",
    ecnsharp_fig22 => "ecnsharp-fig22",
    ecnsharp_ls => "ecnsharp-ls",
    ecnsharp_fig16 => "ecnsharp-fig16",
    ecnsharp_fig17 => "ecnsharp-fig17",
    ecnsharp_fig18 => "ecnsharp-fig18",
    ecnsharp_fig20 => "ecnsharp-fig20",
}

#[test]
fn every_registered_definition_parses_with_its_magnitude_claims() {
    for id in registry::ids() {
        let d = registry::get(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert!(
            !d.magnitude.is_empty() || d.magnitude_note.is_some(),
            "{id}: no magnitude claim and no note saying why"
        );
        for m in &d.magnitude {
            assert!(m.claim.contains('§') || m.claim.contains("Fig"), "{id}: `{}` cites no section or figure", m.name);
        }
    }
}

#[test]
fn rerunning_into_the_same_directory_skips_completed_runs() {
    let out = std::env::temp_dir().join(format!("ecnlab-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let opts = Options::new(ScaleKind::Quick, out.clone());
    let first = experiment::reproduce("ecnstar-table1", &opts).unwrap();
    let table = std::fs::read_to_string(out.join("table.csv")).unwrap();
    let again = experiment::reproduce("ecnstar-table1", &opts).unwrap();
    assert_eq!(first.runs_executed, first.runs);
    assert_eq!(again.runs_executed, 0, "all runs come from the cache");
    assert_eq!(std::fs::read_to_string(out.join("table.csv")).unwrap(), table);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_cached_point_edited_by_hand_or_made_by_another_build_is_run_again() {
    let out = std::env::temp_dir().join(format!("ecnlab-cache-trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let opts = Options::new(ScaleKind::Quick, out.clone());
    let first = experiment::reproduce("ecnstar-table1", &opts).unwrap();
    let table = std::fs::read_to_string(out.join("table.csv")).unwrap();
    // Every row names the build that ran it.
    let build = experiment::runner::BUILD;
    assert!(table.lines().next().unwrap().ends_with(",build"));
    assert!(table.lines().skip(1).all(|l| l.ends_with(&format!(",{build}"))), "{table}");
    let records: Vec<_> = std::fs::read_dir(out.join("runs")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(records.len(), first.runs);
    // One record's metric edited, another's build and key rewritten as an older simulator's would be.
    let edit = |p: &std::path::Path, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(p, v.to_string()).unwrap();
    };
    edit(&records[0], &|v| {
        let m = v["metrics"].as_object_mut().unwrap();
        let k = m.keys().next().unwrap().clone();
        m.insert(k, serde_json::json!(123456.0));
    });
    edit(&records[1], &|v| {
        v["scenario_hash"] = serde_json::json!("0000000000000000");
        v["build"] = serde_json::json!("0.0.1+old");
    });
    let again = experiment::reproduce("ecnstar-table1", &opts).unwrap();
    assert_eq!(again.runs_executed, 2, "the edited and the foreign record are run again, the rest reused");
    assert_eq!(std::fs::read_to_string(out.join("table.csv")).unwrap(), table, "the same table as the first run");
    let check: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("check.json")).unwrap()).unwrap();
    assert_eq!(check["builds"], serde_json::json!([build]));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn unknown_experiment_is_a_config_error() {
    let opts = Options::new(ScaleKind::Quick, std::env::temp_dir().join("ecnlab-none"));
    assert!(matches!(experiment::reproduce("no-such-figure", &opts), Err(ecnlab::Error::Config { .. })));
}

#[test]
fn a_cancelled_grid_stops_with_interrupted_and_writes_no_tables() {
    let out = std::env::temp_dir().join(format!("ecnlab-cancelled-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let opts = Options { jobs: 2, ..Options::new(ScaleKind::Quick, out.clone()) };
    opts.cancel.cancel();
    assert!(matches!(experiment::reproduce("ecnstar-table1", &opts), Err(ecnlab::Error::Interrupted)));
    assert!(!out.join("table.csv").exists() && !out.join("check.md").exists());
    let _ = std::fs::remove_dir_all(&out);
}
