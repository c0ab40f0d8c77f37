//! What a provider costs the process while it lives: no thread and no descriptor of its own
//! (every provider's HTTP client runs on one shared runtime). A host that makes a provider per
//! task, and frees them only when a garbage collector runs, does not pile up threads.

use user_questions_remote::RemoteProvider;

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn providers_share_one_runtime_thread() {
    // The first starts the shared runtime.
    let first = RemoteProvider::new("http://127.0.0.1:1", "token").unwrap();
    let threads = count("/proc/self/task");
    let descriptors = count("/proc/self/fd");
    let kept: Vec<RemoteProvider> = (0..30)
        .map(|_| RemoteProvider::new("http://127.0.0.1:1", "token").unwrap())
        .collect();
    assert_eq!(count("/proc/self/task"), threads, "no thread per provider");
    assert!(
        count("/proc/self/fd") <= descriptors + 2,
        "no descriptors per provider: {} then {}",
        descriptors,
        count("/proc/self/fd")
    );
    drop(kept);
    drop(first);
    // The runtime stays for the next provider.
    let _again = RemoteProvider::new("http://127.0.0.1:1", "token").unwrap();
    assert_eq!(count("/proc/self/task"), threads);
}
