//! Running iproute2 (`ip`, `tc`): namespaces and qdiscs are configured the way an operator
//! would, so `ip netns list` and `tc qdisc show` explain what a run set up.

use crate::error::PRIVILEGE_HINT;
use crate::EmulationError;
use std::process::{Command, Stdio};

/// Runs `program args…` and returns its standard output; a failure carries the command line
/// and its standard error.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, EmulationError> {
    let command_line = format!("{program} {}", args.join(" "));
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| {
            if error.kind() == std::io::ErrorKind::NotFound {
                EmulationError::new(
                    format!("`{program}` is not installed"),
                    "install iproute2 (it provides ip and tc), or use --emulator relay",
                )
            } else {
                EmulationError::io(format!("could not run `{command_line}`"), error)
            }
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    let hint = if stderr.contains("Operation not permitted") || stderr.contains("Permission denied")
    {
        PRIVILEGE_HINT
    } else {
        "see the tool's message above, or use --emulator relay"
    };
    Err(EmulationError::new(
        format!("`{command_line}` failed: {stderr}"),
        hint,
    ))
}
