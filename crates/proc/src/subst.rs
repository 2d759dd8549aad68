//! `{threads}`, `{cpus}`, `{node}`-style substitution in a command's arguments.

/// Placeholder names used in `args` (`{name}`; `{{` and `}}` are literal braces).
pub fn placeholders(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for a in args {
        let mut rest = a.as_str();
        while let Some(start) = rest.find('{') {
            if rest[start..].starts_with("{{") {
                rest = &rest[start + 2..];
                continue;
            }
            match rest[start + 1..].find('}') {
                Some(end) => {
                    let name = &rest[start + 1..start + 1 + end];
                    if !name.is_empty()
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        out.push(name.to_string());
                    }
                    rest = &rest[start + 1 + end + 1..];
                }
                None => break,
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Replaces `{name}` by its value in every argument. `{{`/`}}` give literal braces.
/// An unknown placeholder is an error that lists the known ones.
pub fn substitute(args: &[String], vars: &[(&str, String)]) -> Result<Vec<String>, String> {
    let known: Vec<&str> = vars.iter().map(|(k, _)| *k).collect();
    for p in placeholders(args) {
        if !known.contains(&p.as_str()) {
            return Err(format!(
                "unknown placeholder {{{p}}} in the command; known: {}",
                known
                    .iter()
                    .map(|k| format!("{{{k}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(args
        .iter()
        .map(|a| {
            let mut s = a.replace("{{", "\u{0}").replace("}}", "\u{1}");
            for (k, v) in vars {
                s = s.replace(&format!("{{{k}}}"), v);
            }
            s.replace('\u{0}', "{").replace('\u{1}', "}")
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn substitutes_and_escapes() {
        let args = v(&[
            "-t",
            "{threads}",
            "--cpus={cpus}",
            "{{literal}}",
            "x{node}y",
        ]);
        assert_eq!(placeholders(&args), vec!["cpus", "node", "threads"]);
        let out = substitute(
            &args,
            &[
                ("threads", "8".into()),
                ("cpus", "0-7".into()),
                ("node", "1".into()),
            ],
        )
        .unwrap();
        assert_eq!(out, v(&["-t", "8", "--cpus=0-7", "{literal}", "x1y"]));
    }

    #[test]
    fn unknown_placeholder_is_named() {
        let err = substitute(&v(&["{thread}"]), &[("threads", "1".into())]).unwrap_err();
        assert!(
            err.contains("{thread}") && err.contains("{threads}"),
            "{err}"
        );
        // JSON-looking arguments are not placeholders.
        assert!(substitute(&v(&["{\"a\": 1}"]), &[]).is_ok());
    }
}
