//! A results store, as any bytes, in the reports: the run summary, the report's data and its
//! Markdown give results or an error, never a panic, whatever the store holds.

// Each fuzz target is its own crate, so this check brings the store target's opening with
// it; the stable regression test, which loads every check into one crate, then has it twice.
#[allow(clippy::duplicate_mod)]
#[path = "store.rs"]
mod store;

pub fn check(bytes: &[u8]) {
    let Some(store) = store::open(bytes) else {
        return;
    };
    if let Ok(data) = tlslab_report::ReportData::from_store(&store) {
        let _ = tlslab_report::render_markdown(&data, None);
    }
    let _ = tlslab_report::RunSummary::from_store(&store);
}
