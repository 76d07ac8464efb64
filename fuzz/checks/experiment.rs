//! An experiment file, as any bytes: reading it, expanding its matrix and laying out its plan
//! must give Configs or an error with a hint, never a panic or an allocation without bound.

use tlslab_core::{Experiment, Plan};

pub fn check(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(experiment) = Experiment::from_toml(text) else {
        return;
    };
    if let Ok(configs) = experiment.configs() {
        let plan = Plan::new(&experiment, &configs, 1);
        let _ = plan.total_handshakes();
        // What --dump-experiment prints reads back as the same experiment. Tables without a
        // matrix are dumped with `matrix = false`: the same Configs, and the dumped file then
        // refuses dimension flags instead of crossing them.
        let again = Experiment::from_toml(&experiment.to_toml());
        let mut expected = experiment.clone();
        if !expected.explicit.is_empty() && expected.matrix.is_none() {
            expected.matrix = Some(false);
        }
        assert_eq!(again.as_ref().ok(), Some(&expected));
        if let Ok(again) = &again {
            assert_eq!(again.configs().ok(), Some(configs));
        }
    }
}
