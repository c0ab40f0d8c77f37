//! The HTTP client of the hub's tests: a tokio runtime of two workers and a reqwest client
//! that follows no redirect (the tests look at them) and pools no connection (a restarted hub
//! is a new server on the same address).

use reqwest::Client;
use tokio::runtime::Runtime;

/// The runtime the tests block on, and a client made on it.
pub fn runtime_and_client() -> (Runtime, Client) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = {
        let _guard = rt.enter();
        Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(0)
            .build()
            .unwrap()
    };
    (rt, client)
}
