//! What both programs say on a terminal: a usage error as one line and a
//! non-zero exit, and the log's plain format on stderr.

use std::process::ExitCode;

use clap::error::ErrorKind;

/// clap's multi-line errors, folded into one line after @program's name
/// (help and version are printed as they are).
pub fn usage_error(program: &str, e: clap::Error) -> ExitCode {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    eprintln!("{program}: {}", one_line(&e.to_string()));
    ExitCode::from(2)
}

/// The error of clap's text, without its usage and hint, on one line.
fn one_line(text: &str) -> String {
    let body = text
        .split("\n\nUsage:")
        .next()
        .and_then(|t| t.split("\n\nFor more information").next())
        .unwrap_or(text);
    let line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    line.trim_start_matches("error: ").to_string()
}

/// Log lines as "[LEVEL] message" on stderr, debug ones with @verbose.
pub fn init_logging(verbose: bool) {
    let level = if verbose {
        simplelog::LevelFilter::Debug
    } else {
        simplelog::LevelFilter::Info
    };
    let config = simplelog::ConfigBuilder::new()
        .set_time_level(simplelog::LevelFilter::Off)
        .set_target_level(simplelog::LevelFilter::Off)
        .set_thread_level(simplelog::LevelFilter::Off)
        .set_location_level(simplelog::LevelFilter::Off)
        .build();
    // A second logger cannot exist; nothing to do if one does.
    let _ = simplelog::TermLogger::init(
        level,
        config,
        simplelog::TerminalMode::Stderr,
        simplelog::ColorChoice::Never,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_fold_into_one_line() {
        let text = "error: invalid value 'x' for '--policy <POLICY>'\n  [possible values: util, prop]\n\nUsage: scx_sisutil [OPTIONS]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(text),
            "invalid value 'x' for '--policy <POLICY>' [possible values: util, prop]"
        );
    }
}
