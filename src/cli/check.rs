//! `interpose check`: the kernel features enforcement needs.

use crate::sandbox::features::probe;

/// Prints the features; returns the exit code (1 when enforcement is impossible).
pub fn run() -> i32 {
    let features = probe();
    for f in &features {
        let mark = if f.present {
            "yes"
        } else if f.required {
            "MISSING"
        } else {
            "no"
        };
        println!("{:<54} {:<8} {}", f.name, mark, f.detail);
    }
    if features.iter().any(|f| f.required && !f.present) {
        println!("enforcement: impossible on this kernel");
        1
    } else {
        println!("enforcement: available");
        0
    }
}
