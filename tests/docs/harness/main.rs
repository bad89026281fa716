// The program around a Rust fragment of README.md or docs/*.md:
// run_snippets.py puts the fragment where the marker line below is, as the
// body of snippet() (so `?` works), and runs it against payretry-sim. The
// names a fragment leaves to its reader are defined here.
#![allow(unused)]

/// The very bytes first submitted for an order, as the driver writes them
/// (its order in metadata.order_id, as the stripe profile requires).
fn load_body(order_id: &str) -> Option<Vec<u8>> {
    Some(format!(r#"{{"amount":1000,"currency":"eur","metadata":{{"order_id":"{order_id}"}}}}"#).into_bytes())
}

fn snippet() -> Result<(), Box<dyn std::error::Error>> {
    // THE FRAGMENT
    Ok(())
}

fn main() {
    if let Err(e) = snippet() {
        eprintln!("docs-harness: the fragment returned {e}");
        std::process::exit(1);
    }
}
