//! `sisutil-lab get`: values of a JSON document by path, for scripts. The
//! scheduler's `stats --json`, the observer's and the monitor's records
//! nest (per LLC, per rule, per pair of rules), so a reader that matches
//! text (grep for `"found":`) takes whichever record comes first; a path
//! names the one it means, and a path that is not there is an error
//! rather than an empty string a shell test compares as 0.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;

#[derive(Debug, Args)]
pub struct GetOpts {
    /// Paths: keys and array indexes joined by dots (`scans`,
    /// `llcs.0.found`, `pairs.util/full.first_only`, `limit.0`), `*` for
    /// every member (`llcs.*.width`); each value on a line of its own
    #[arg(required = true)]
    paths: Vec<String>,
    /// Read the document from this file (default: standard input)
    #[arg(long)]
    file: Option<PathBuf>,
    /// Every line of the input that holds a JSON object is a document
    /// (the monitor's log): a path's values come one per document, in order
    #[arg(long)]
    lines: bool,
    /// Print the keys of the object at each path (its array indexes for an
    /// array), space-separated, instead of its value
    #[arg(long)]
    keys: bool,
}

pub fn main(o: &GetOpts) -> Result<()> {
    let text = match &o.file {
        Some(f) => {
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?
        }
        None => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read standard input")?;
            s
        }
    };
    let docs = documents(&text, o.lines)?;
    let mut out = String::new();
    for path in &o.paths {
        for doc in &docs {
            for v in lookup(doc, path)? {
                out.push_str(&if o.keys { keys(v, path)? } else { render(v) });
                out.push('\n');
            }
        }
    }
    print!("{out}");
    Ok(())
}

/// The input's documents: the whole of it, or each line that is a JSON
/// object (a log may mix them with other lines). A log read while its
/// writer runs may end in half a line: that one is left out, any other
/// that does not parse is an error.
fn documents(text: &str, lines: bool) -> Result<Vec<Value>> {
    if !lines {
        return serde_json::from_str(text.trim())
            .map(|v| vec![v])
            .context("the input is not one JSON document");
    }
    let complete = text.ends_with('\n');
    let all: Vec<&str> = text.lines().collect();
    let mut docs = Vec::new();
    for (i, l) in all.iter().enumerate() {
        if !l.trim_start().starts_with('{') {
            continue;
        }
        match serde_json::from_str(l) {
            Ok(v) => docs.push(v),
            Err(_) if i + 1 == all.len() && !complete => {}
            Err(e) => return Err(e).with_context(|| format!("line {} is not JSON", i + 1)),
        }
    }
    Ok(docs)
}

/// The values at @path: a key of an object, an index of an array, or `*`
/// for every member (objects in key order, see ordered()), each step.
/// Below a `*` a member that lacks the next step is passed over (the
/// samples of a results file that have a metric); the path as a whole must
/// find something.
fn lookup<'a>(doc: &'a Value, path: &str) -> Result<Vec<&'a Value>> {
    let mut found = vec![doc];
    let mut seen = String::new();
    let mut under_star = false;
    for step in path.split('.') {
        let mut next = Vec::new();
        for v in found {
            if step == "*" {
                match v {
                    Value::Object(m) => next.extend(ordered(m).into_iter().map(|k| &m[k])),
                    Value::Array(a) => next.extend(a),
                    _ if under_star => {}
                    _ => bail!(
                        "{} is neither an object nor an array (path {path})",
                        or_doc(&seen)
                    ),
                }
                continue;
            }
            let member = match v {
                Value::Object(m) => m.get(step),
                Value::Array(a) => step.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            };
            match member {
                Some(m) => next.push(m),
                None if under_star => {}
                None => bail!("no {step} in {} (path {path})", or_doc(&seen)),
            }
        }
        found = next;
        under_star |= step == "*";
        if !seen.is_empty() {
            seen.push('.');
        }
        seen.push_str(step);
    }
    if found.is_empty() {
        bail!("nothing at {path}");
    }
    Ok(found)
}

fn or_doc(seen: &str) -> &str {
    if seen.is_empty() {
        "the document"
    } else {
        seen
    }
}

/// An object's keys, those that are numbers (LLCs, nodes) in numeric
/// order: 2 before 10.
fn ordered(m: &serde_json::Map<String, Value>) -> Vec<&String> {
    let mut k: Vec<&String> = m.keys().collect();
    k.sort_by_key(|s| (s.parse::<u64>().unwrap_or(u64::MAX), s.as_str()));
    k
}

/// A value as a shell reads it: a number or string bare, an array of
/// scalars space-separated, anything else as compact JSON.
fn render(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) if a.iter().all(|e| !e.is_array() && !e.is_object()) => {
            a.iter().map(render).collect::<Vec<_>>().join(" ")
        }
        _ => v.to_string(),
    }
}

fn keys(v: &Value, path: &str) -> Result<String> {
    Ok(match v {
        Value::Object(m) => ordered(m)
            .into_iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(" "),
        Value::Array(a) => (0..a.len())
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        _ => bail!("{path} is neither an object nor an array"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"scans":12,"limit":[3,0,9],"policy":"util","util_pct":57.5,
        "llcs":{"0":{"found":4,"auto_gain_ns":[-1.5,2.0]},"1":{"found":7}},
        "pairs":{"util/full":{"first_only":0}},"rules":{"prop":{"judged":12}}}"#;

    fn get(path: &str) -> Result<String> {
        let doc: Value = serde_json::from_str(DOC).unwrap();
        let v = lookup(&doc, path)?;
        Ok(v.into_iter().map(render).collect::<Vec<_>>().join("\n"))
    }

    #[test]
    fn a_path_names_one_record() {
        assert_eq!(get("scans").unwrap(), "12");
        assert_eq!(get("llcs.1.found").unwrap(), "7");
        assert_eq!(get("pairs.util/full.first_only").unwrap(), "0");
        assert_eq!(get("limit.2").unwrap(), "9");
        assert_eq!(get("policy").unwrap(), "util");
        assert_eq!(get("util_pct").unwrap(), "57.5");
    }

    #[test]
    fn arrays_of_numbers_read_as_words() {
        assert_eq!(get("limit").unwrap(), "3 0 9");
        assert_eq!(get("llcs.0.auto_gain_ns").unwrap(), "-1.5 2.0");
    }

    #[test]
    fn a_missing_step_is_an_error_that_names_it() {
        let e = get("llcs.2.found").unwrap_err().to_string();
        assert_eq!(e, "no 2 in llcs (path llcs.2.found)");
        assert_eq!(
            get("nope").unwrap_err().to_string(),
            "no nope in the document (path nope)"
        );
        assert!(get("scans.0").is_err());
        assert!(get("limit.x").is_err());
    }

    #[test]
    fn a_star_takes_every_member_in_order() {
        assert_eq!(get("llcs.*.found").unwrap(), "4\n7");
        assert_eq!(get("limit.*").unwrap(), "3\n0\n9");
        // Below a star, the members that have the step.
        assert_eq!(get("llcs.*.auto_gain_ns").unwrap(), "-1.5 2.0");
        assert_eq!(get("*.prop.judged").unwrap(), "12");
        assert_eq!(
            get("llcs.*.nope").unwrap_err().to_string(),
            "nothing at llcs.*.nope"
        );
        assert!(get("scans.*").is_err());
    }

    #[test]
    fn keys_list_an_objects_members() {
        let doc: Value = serde_json::from_str(DOC).unwrap();
        let at = |p: &str| lookup(&doc, p).unwrap()[0];
        assert_eq!(keys(at("llcs"), "llcs").unwrap(), "0 1");
        let wide: Value = serde_json::from_str(r#"{"10":0,"2":0,"x":0}"#).unwrap();
        assert_eq!(keys(&wide, "").unwrap(), "2 10 x");
        assert_eq!(keys(at("limit"), "limit").unwrap(), "0 1 2");
        assert!(keys(at("scans"), "scans").is_err());
    }

    #[test]
    fn a_log_is_read_one_document_a_line() {
        let log = "started\n{\"n\":1}\n# note\n{\"n\":2}\n";
        let docs = documents(log, true).unwrap();
        let n: Vec<String> = docs
            .iter()
            .map(|d| render(lookup(d, "n").unwrap()[0]))
            .collect();
        assert_eq!(n, ["1", "2"]);
        assert!(documents("{\"n\":1}\n{\"n\":2}", false).is_err());
        // Half a last line, as a reader finds a log being written, is left
        // out; a broken line anywhere else is an error.
        assert_eq!(documents("{\"n\":1}\n{\"n\":", true).unwrap().len(), 1);
        assert!(documents("{\"n\":\n{\"n\":1}\n", true).is_err());
        assert!(documents("{\"n\":1}\n{\"n\":\n", true).is_err());
    }
}
