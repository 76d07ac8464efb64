// Records the commit a binary was built from, so every run stores it and `--version` names it.
// Outside a git checkout (a packaged crate) the commit is "unknown".
use std::path::PathBuf;
use std::process::Command;

/// `git rev-parse ARGUMENTS` in this crate's directory, or None when git or the checkout is
/// absent.
fn rev_parse(arguments: &[&str]) -> Option<String> {
    Command::new("git")
        .arg("rev-parse")
        .args(arguments)
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn main() {
    let commit = rev_parse(&["--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TLSLAB_COMMIT={commit}");
    // Rebuild when HEAD moves. In a worktree `.git` is a file and HEAD lives in the worktree's
    // own git directory while branches live in the common one, so both are asked of git
    // rather than assumed at ../../.git.
    let (Some(git_directory), Some(common_directory)) = (
        rev_parse(&["--absolute-git-dir"]),
        rev_parse(&["--path-format=absolute", "--git-common-dir"]),
    ) else {
        return;
    };
    let head = PathBuf::from(&git_directory).join("HEAD");
    println!("cargo:rerun-if-changed={}", head.display());
    let common = PathBuf::from(common_directory);
    println!(
        "cargo:rerun-if-changed={}",
        common.join("packed-refs").display()
    );
    // A checked-out branch: its ref file moves with every commit.
    if let Some(branch) = std::fs::read_to_string(&head)
        .ok()
        .and_then(|text| text.trim().strip_prefix("ref: ").map(str::to_string))
    {
        println!("cargo:rerun-if-changed={}", common.join(branch).display());
    }
}
