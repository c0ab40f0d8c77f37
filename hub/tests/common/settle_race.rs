//! One round of an answer, a cancel, a withdrawal and more time sent at once for one ask (the
//! question `q` of options `A`, `B`, with a deadline), for the hub's tests on SQLite and on
//! PostgreSQL: each request may go to another hub.

use reqwest::{Client, StatusCode};
use serde_json::Value;

/// What is sent, in this order.
pub const KINDS: [&str; 4] = ["answer", "cancel", "withdraw", "extend"];

/// Sends the four requests for `ticket` at once, each to the hub at the base URL `hubs[i]`
/// (`http://HOST:PORT`); the `(kind, status, body)` of each reply.
pub async fn send_all(
    client: &Client,
    token: &str,
    hubs: [&str; 4],
    ticket: u64,
) -> Vec<(&'static str, StatusCode, Value)> {
    let send = |kind: &'static str, base: &str| {
        let request = match kind {
            "answer" => client
                .post(format!("{base}/api/v1/questions/{ticket}/answer"))
                .body(r#"{"answers":[{"id":"q","selected":["A"]}]}"#),
            "cancel" => client.post(format!("{base}/api/v1/questions/{ticket}/cancel")),
            "extend" => client
                .post(format!("{base}/api/v1/questions/{ticket}/extend"))
                .body(r#"{"ms":900000}"#),
            _ => client.delete(format!("{base}/api/v1/asks/{ticket}")),
        }
        .bearer_auth(token);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            let value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
            (kind, status, value)
        }
    };
    let (a, b, c, d) = tokio::join!(
        send(KINDS[0], hubs[0]),
        send(KINDS[1], hubs[1]),
        send(KINDS[2], hubs[2]),
        send(KINDS[3], hubs[3])
    );
    vec![a, b, c, d]
}

/// Checks the replies of one round: exactly one settlement acknowledged (200), the others
/// refused with 409 `ALREADY_RESOLVED` naming the ticket, more time either acknowledged with
/// the new `expiresAt` or refused likewise. The winner's kind and the status it leaves.
pub fn winner(
    round: usize,
    ticket: u64,
    replies: &[(&'static str, StatusCode, Value)],
) -> (&'static str, &'static str) {
    let mut won = Vec::new();
    for (kind, status, value) in replies {
        match *status {
            StatusCode::OK if *kind != "extend" => won.push(*kind),
            StatusCode::OK => assert!(value["expiresAt"].is_string(), "{value}"),
            StatusCode::CONFLICT => assert_eq!(
                (&value["error"]["code"], &value["error"]["message"]),
                (
                    &Value::from("ALREADY_RESOLVED"),
                    &Value::from(format!("question {ticket} is already resolved"))
                ),
                "round {round}: {kind}"
            ),
            other => panic!("round {round}: {kind}: {other} {value}"),
        }
    }
    assert_eq!(won.len(), 1, "round {round}: {replies:?}");
    let status = match won[0] {
        "answer" => "answered",
        "cancel" => "cancelled",
        _ => "withdrawn",
    };
    (won[0], status)
}
