//! `rebound serve` under clients that hold connections, on the real
//! process over raw sockets: the idle, header and body timeouts close what waits too long; past
//! `--max-connections` a connection is answered 503 at once and counted; on SIGTERM every
//! request already sent is answered, idle connections are closed, a half-sent request does not
//! hold the exit past the drain timeout, and a second signal exits at once.

use crate::support;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};
use support::guest;
use support::server::Server;

use serde_json::Value;

/// A configuration with the built-in `standard` (default) and `slow`: the adversary policy,
/// whose `spin` request runs until its 300 ms deadline.
fn config() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(guest("adversary"), dir.path().join("adversary.wasm")).unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "standard"
[policies.standard]
builtin = "best-effort"
[policies.slow]
component = "adversary.wasm"
limits = { deadline_ms = 300, fuel = 100_000_000_000 }
quarantine = { after_failures = 0 }
"#,
    )
    .unwrap();
    dir
}

/// `config()` and `stalling`: the adversary policy whose `spin` request runs until its 5 s
/// deadline, long enough that a signal sent by a stalled test thread still comes while it runs.
fn config_with_stalling() -> tempfile::TempDir {
    let dir = config();
    let toml = dir.path().join("rebound.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str(
        r#"
[policies.stalling]
component = "adversary.wasm"
limits = { deadline_ms = 5000, fuel = 100_000_000_000 }
quarantine = { after_failures = 0 }
"#,
    );
    std::fs::write(&toml, text).unwrap();
    dir
}

fn serve(dir: &Path, options: &[&str]) -> Server {
    Server::start_with_options(&dir.join("rebound.toml"), options)
}

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(server.authority()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

/// A whole `POST /v1/decide` request with `body`.
fn decide_request(body: &str) -> String {
    format!(
        "POST /v1/decide HTTP/1.1\r\nHost: rebound\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

const STANDARD: &str = r#"{"reason": "KV_LOCKED"}"#;
const SLOW: &str =
    r#"{"policy": "slow", "request": {"client_context": {"spin": "yes"}}, "reason": "KV_LOCKED"}"#;

/// Reads one response (headers and a `Content-Length` body): its status and body.
fn read_response(stream: &mut TcpStream) -> Option<(u16, String)> {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => raw.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8(raw).unwrap();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).ok()?;
    Some((status, String::from_utf8(body).unwrap()))
}

/// How long until the server closes `stream` (a read returns end of file or a reset).
fn closed_after(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    let mut sink = [0u8; 512];
    loop {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return started.elapsed(),
            Ok(_) => {}
        }
    }
}

fn metric(server: &Server, line_start: &str) -> f64 {
    let (_, text) = server.call("GET", "/metrics", "", None);
    let text = text.as_str().unwrap().to_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(line_start))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line_start} in\n{text}"))
}

#[test]
fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let dir = config();
    let server = serve(dir.path(), &["--idle-timeout-ms", "300"]);
    // Kept alive after an answer, then idle.
    let mut stream = connect(&server);
    stream
        .write_all(decide_request(STANDARD).as_bytes())
        .unwrap();
    assert_eq!(read_response(&mut stream).unwrap().0, 200);
    let took = closed_after(&mut stream);
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // Never used at all.
    let mut silent = connect(&server);
    assert!(closed_after(&mut silent) < Duration::from_secs(5));
    assert!(
        metric(
            &server,
            "rebound_connections_closed_total{reason=\"idle_timeout\"}"
        ) >= 2.0
    );
}

#[test]
fn headers_and_bodies_that_take_too_long_are_cut_off() {
    let dir = config();
    let server = serve(
        dir.path(),
        &["--header-timeout-ms", "300", "--body-timeout-ms", "300"],
    );
    // A head that never ends (slowloris): closed, while others are served.
    let mut slow_head = connect(&server);
    slow_head
        .write_all(b"POST /v1/decide HTTP/1.1\r\nHost: rebound\r\n")
        .unwrap();
    assert_eq!(
        server
            .post("/v1/decide", serde_json::json!({"reason": "KV_LOCKED"}))
            .0,
        200
    );
    let took = closed_after(&mut slow_head);
    assert!(took < Duration::from_secs(5), "{took:?}");

    // A body that stops arriving: 408 with the JSON error object, and the connection closed.
    let mut slow_body = connect(&server);
    slow_body
        .write_all(b"POST /v1/decide HTTP/1.1\r\nHost: rebound\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"reason\"")
        .unwrap();
    let (status, body) = read_response(&mut slow_body).expect("an answer");
    assert_eq!(status, 408, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not arrive within 300 ms"),
        "{body}"
    );
    assert!(closed_after(&mut slow_body) < Duration::from_secs(5));
    assert!(
        metric(
            &server,
            "rebound_connections_closed_total{reason=\"header_timeout\"}"
        ) >= 1.0
    );
    assert!(
        metric(
            &server,
            "rebound_connections_closed_total{reason=\"body_timeout\"}"
        ) >= 1.0
    );
}

/// `cap` connections held open, all accepted (an answer on the first proves the accept loop
/// has taken them all).
fn hold_the_cap(server: &Server, cap: usize) -> Vec<TcpStream> {
    let mut held: Vec<TcpStream> = (0..cap).map(|_| connect(server)).collect();
    held[0]
        .write_all(decide_request(STANDARD).as_bytes())
        .unwrap();
    assert_eq!(read_response(&mut held[0]).unwrap().0, 200);
    held
}

/// Waits until the server answers a decision again (a place freed), failing after 5 s.
fn decides_again(server: &Server) -> Value {
    let started = Instant::now();
    loop {
        let (status, answer) =
            server.post("/v1/decide", serde_json::json!({"reason": "KV_LOCKED"}));
        if status == 200 {
            return answer;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{status} {answer}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn past_the_connection_cap_a_connection_is_refused_at_once() {
    let dir = config();
    let server = serve(dir.path(), &["--max-connections", "4"]);
    let held = hold_the_cap(&server, 4);

    let started = Instant::now();
    let mut fifth = connect(&server);
    let (status, body) = read_response(&mut fifth).expect("a refusal, not a hang");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("too many connections"));

    // A place freed is a place taken.
    drop(held);
    assert_eq!(decides_again(&server)["decision"], "retry");
    assert!(metric(&server, "rebound_connections_refused_total") >= 1.0);
    let (_, log) = server.terminate();
    assert!(
        log.contains("connection refused: too many connections open"),
        "{log}"
    );
}

/// docs/serve.md "Connections and shutdown": past the cap, thirty clients at once send their
/// request in two parts, the second after the server has answered; each can send it all and
/// then reads the 503 and its JSON error (a socket closed with bytes unread would have reset
/// the connection, failing the second write), and every refusal is counted.
#[test]
fn past_the_cap_clients_that_sent_their_request_read_the_503() {
    let dir = config();
    let server = serve(dir.path(), &["--max-connections", "2"]);
    let held = hold_the_cap(&server, 2);
    // Each client sends its request in two parts, the second after the server has answered.
    let request = decide_request(STANDARD);
    let (early, late) = request.split_at(request.len() / 2);
    let answers: Vec<Option<(u16, String)>> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..30)
            .map(|_| {
                scope.spawn(|| {
                    let mut client = connect(&server);
                    client.write_all(early.as_bytes()).ok()?;
                    std::thread::sleep(Duration::from_millis(100));
                    client.write_all(late.as_bytes()).ok()?;
                    read_response(&mut client)
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for answer in &answers {
        let (status, body) = answer.as_ref().expect("the 503, not a reset");
        assert_eq!(*status, 503, "{body}");
        assert!(body.contains("too many connections"), "{body}");
    }
    drop(held);
    decides_again(&server);
    assert!(metric(&server, "rebound_connections_refused_total") >= 30.0);
}

/// Eight clients, each on a kept-alive connection that has already been answered once (hyper
/// counts such a connection idle between requests, and a plain graceful shutdown closes it),
/// have sent a request each to a policy that takes 300 ms (two workers: most are still unread
/// when the signal comes); every one is answered, idle connections are closed, and the server
/// exits.
#[test]
fn on_sigterm_every_request_sent_is_answered() {
    let dir = config();
    let mut server = serve(dir.path(), &[]);
    let mut idle = connect(&server);
    let mut clients: Vec<TcpStream> = (0..8).map(|_| connect(&server)).collect();
    for client in &mut clients {
        client
            .write_all(decide_request(STANDARD).as_bytes())
            .unwrap();
        assert_eq!(read_response(client).unwrap().0, 200);
    }
    for client in &mut clients {
        client.write_all(decide_request(SLOW).as_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    server.signal("TERM");
    let answered = clients
        .iter_mut()
        .filter_map(read_response)
        .filter(|(status, body)| *status == 200 && body.contains("POLICY_FAILED"))
        .count();
    assert_eq!(answered, 8, "requests sent before the signal, answered");
    assert!(closed_after(&mut idle) < Duration::from_secs(5));
    let (success, log, _) = server.wait_exit(Duration::from_secs(10));
    assert!(success, "{log}");
    assert!(log.contains("every request received was answered"), "{log}");
}

/// docs/serve.md "Connections and shutdown": three clients each pipeline three requests in one
/// write (a policy call that spins to its 5 s deadline, then two built-in decisions), so that
/// when SIGTERM comes the first is in flight and the other two wait in the server's buffer.
/// Every one of the 9 is answered, in order, before the server closes the connection, and the
/// log's claim counts them. The deadline is long so that a stalled test thread still signals
/// while the first calls run; that it did is checked before the signal.
#[test]
fn on_sigterm_pipelined_requests_are_all_answered() {
    let dir = config_with_stalling();
    let mut server = serve(dir.path(), &[]);
    let mut clients: Vec<TcpStream> = (0..3).map(|_| connect(&server)).collect();
    for client in &mut clients {
        client
            .write_all(decide_request(STANDARD).as_bytes())
            .unwrap();
        assert_eq!(read_response(client).unwrap().0, 200);
    }
    let stalling = SLOW.replace("\"slow\"", "\"stalling\"");
    let pipelined = [stalling.as_str(), STANDARD, STANDARD]
        .map(decide_request)
        .concat();
    let sent = Instant::now();
    for client in &mut clients {
        client.write_all(pipelined.as_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    for (i, client) in clients.iter().enumerate() {
        client.set_nonblocking(true).unwrap();
        let nothing_yet = client.peek(&mut [0u8; 1]).is_err();
        client.set_nonblocking(false).unwrap();
        assert!(
            nothing_yet && sent.elapsed() < Duration::from_secs(4),
            "client {i}: an answer came {:?} after sending, before the signal",
            sent.elapsed()
        );
    }
    server.signal("TERM");
    for (i, client) in clients.iter_mut().enumerate() {
        let answers: Vec<(u16, String)> = std::iter::from_fn(|| read_response(client)).collect();
        let decisions: Vec<bool> = answers
            .iter()
            .map(|(status, body)| *status == 200 && body.contains("POLICY_FAILED"))
            .collect();
        assert_eq!(decisions, [true, false, false], "client {i}: {answers:?}");
        assert!(answers[1..]
            .iter()
            .all(|(status, body)| *status == 200 && body.contains("\"decision\":\"retry\"")));
    }
    let (success, log, _) = server.wait_exit(Duration::from_secs(15));
    assert!(success, "{log}");
    assert!(
        log.contains("every request received was answered") && log.contains("answered=9"),
        "{log}"
    );
}

/// A client holding a half-sent request does not hold the exit past the drain timeout.
#[test]
fn a_half_sent_request_does_not_delay_exit_past_the_drain_timeout() {
    let dir = config();
    let mut server = serve(
        dir.path(),
        &["--drain-timeout-ms", "500", "--header-timeout-ms", "60000"],
    );
    let mut half = connect(&server);
    half.write_all(b"POST /v1/decide HTTP/1.1\r\nHost: rebound\r\nContent-Le")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    server.signal("TERM");
    let (success, log, took) = server.wait_exit(Duration::from_secs(10));
    assert!(success, "{log}");
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(
        log.contains("drain timeout: closing the connections still open"),
        "{log}"
    );
}

/// A second signal during the drain exits at once.
#[test]
fn a_second_signal_exits_at_once() {
    let dir = config();
    let mut server = serve(
        dir.path(),
        &[
            "--drain-timeout-ms",
            "60000",
            "--header-timeout-ms",
            "60000",
        ],
    );
    let mut half = connect(&server);
    half.write_all(b"POST /v1/decide HTTP/1.1\r\nHost: rebound\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    server.signal("TERM");
    std::thread::sleep(Duration::from_millis(300));
    server.signal("INT");
    let (success, log, took) = server.wait_exit(Duration::from_secs(10));
    assert!(success, "{log}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(
        log.contains("second signal: closing every connection now"),
        "{log}"
    );
}

/// A request head HTTP cannot parse — a malformed request line, a head
/// over hyper's limit (about 400 KiB), over 100 headers — gets the API's JSON error object
/// under hyper's status, and the connection is closed; on a kept-alive connection the answer
/// before it is untouched.
#[test]
fn a_head_that_cannot_be_parsed_gets_the_json_error_object() {
    let dir = config();
    let server = serve(dir.path(), &[]);
    let many_headers: String = (0..120).map(|i| format!("X-Header-{i}: {i}\r\n")).collect();
    let cases = [
        ("GARBAGE\r\n\r\n".to_owned(), 400),
        (
            format!(
                "GET /health HTTP/1.1\r\nHost: rebound\r\nX-Big: {}\r\n\r\n",
                "a".repeat(500 * 1024)
            ),
            431,
        ),
        (
            format!("GET /health HTTP/1.1\r\nHost: rebound\r\n{many_headers}\r\n"),
            431,
        ),
    ];
    for (request, expected) in &cases {
        let mut stream = connect(&server);
        // A client may see the close before it has sent everything: a big head is refused
        // as soon as it passes the limit.
        let _ = stream.write_all(request.as_bytes());
        let (status, body) = read_response(&mut stream).expect("an answer");
        assert_eq!(status, *expected, "{body}");
        let error: Value = serde_json::from_str(&body).unwrap();
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("docs/serve.md"),
            "{body}"
        );
        assert!(closed_after(&mut stream) < Duration::from_secs(5));
    }
    // A route's answer, then a broken head on the same connection.
    let mut stream = connect(&server);
    stream
        .write_all(decide_request(STANDARD).as_bytes())
        .unwrap();
    let (status, body) = read_response(&mut stream).unwrap();
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["decision"], "retry", "{body}");
    stream.write_all(b"GET / HTTP/9.9\r\n\r\n").unwrap();
    let (status, body) = read_response(&mut stream).unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.starts_with(r#"{"error""#), "{body}");
}

/// Reads one response's head and body (`Content-Length`): the head as text and the body.
fn read_head_and_body(stream: &mut TcpStream) -> (String, String) {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).unwrap(),
            1,
            "the answer's head ended early"
        );
        raw.push(byte[0]);
    }
    let head = String::from_utf8(raw).unwrap().to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    (head, String::from_utf8(body).unwrap())
}

/// docs/serve.md "Connections and shutdown": an answer after which the server closes the
/// connection (a body over the limit, left unread) says `Connection: close`, so that a client
/// sends its next request on a new connection instead of losing it.
#[test]
fn an_answer_before_the_server_closes_says_connection_close() {
    let dir = config();
    let server = serve(dir.path(), &[]);
    let body = "x".repeat(300 * 1024);
    let mut stream = connect(&server);
    let head = format!(
        "POST /v1/decide HTTP/1.1\r\nHost: rebound\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer and close before it has read everything.
    let _ = stream.write_all(body.as_bytes());
    let (head, body) = read_head_and_body(&mut stream);
    assert!(head.starts_with("http/1.1 413"), "{head}{body}");
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
    assert!(closed_after(&mut stream) < Duration::from_secs(5));
    // A kept-alive answer does not say it.
    let mut stream = connect(&server);
    stream
        .write_all(decide_request(STANDARD).as_bytes())
        .unwrap();
    let (head, body) = read_head_and_body(&mut stream);
    assert!(head.starts_with("http/1.1 200"), "{head}{body}");
    assert!(!head.contains("connection: close"), "{head}");
}

/// docs/serve.md "Who may change what decides": a privileged request carrying two `Origin`
/// (or two `Sec-Fetch-Site`) headers is refused, whatever the first says; one same-site
/// `Origin` is let through.
#[test]
fn a_privileged_request_with_two_origins_is_refused() {
    let dir = config();
    let server = serve(dir.path(), &[]);
    let authority = server.authority();
    let send = |extra: &str| {
        let mut stream = connect(&server);
        let request = format!(
            "POST /v1/policies/slow/reload HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n{extra}Content-Length: 2\r\n\r\n{{}}"
        );
        stream.write_all(request.as_bytes()).unwrap();
        read_head_and_body(&mut stream)
    };
    let same_site = format!("Origin: http://{authority}\r\n");
    let (head, body) = send(&same_site);
    assert!(head.starts_with("http/1.1 200"), "{head}{body}");
    for twice in [
        format!("{same_site}Origin: http://elsewhere.example\r\n"),
        format!("{same_site}{same_site}"),
        "Sec-Fetch-Site: same-origin\r\nSec-Fetch-Site: cross-site\r\n".to_owned(),
    ] {
        let (head, body) = send(&twice);
        assert!(head.starts_with("http/1.1 403"), "{twice}: {head}{body}");
        assert!(body.contains("more than one"), "{body}");
    }
}

/// docs/serve.md "Who may change what decides": refused privileged requests, which anyone who
/// can connect can send, are all counted (`rebound_privileged_refused_total`) but logged at most
/// ten lines a second, each carrying at most 128 characters of each value the caller chose
/// (`Origin`, `User-Agent`): 100 000 refusals in a burst (a body not declared as JSON, from a
/// foreign origin) add at most 10 lines of under 1 KiB per second of the burst to the log, and
/// so do 20 000 with a wrong admin token.
#[test]
fn a_burst_of_refused_privileged_requests_is_counted_not_logged_line_by_line() {
    let long = "x".repeat(300);
    let dir = config();
    let server = serve(dir.path(), &[]);
    let not_json = format!(
        "POST /v1/policies/slow/reload HTTP/1.1\r\nHost: rebound\r\nContent-Type: text/plain\r\nOrigin: http://{long}\r\nUser-Agent: {long}\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    refused_in_a_burst(server, &not_json, 100_000, "HTTP/1.1 415", &long);
    let dir = config();
    let server = Server::start(
        &dir.path().join("rebound.toml"),
        "127.0.0.1:0",
        Some("the-admin-token"),
    );
    let wrong_token = format!(
        "POST /v1/policies/slow/reload HTTP/1.1\r\nHost: rebound\r\nContent-Type: application/json\r\nAuthorization: Bearer {long}\r\nUser-Agent: {long}\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    refused_in_a_burst(server, &wrong_token, 20_000, "HTTP/1.1 401", &long);
}

/// Sends `request` `requests` times over four connections, each answered `status`, then
/// checks the counter and the log of `server`.
fn refused_in_a_burst(server: Server, request: &str, requests: usize, status: &str, long: &str) {
    const CONNECTIONS: usize = 4;
    let log_before = 16 * 1024; // the lines of start and stop
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..CONNECTIONS {
            let mut stream = connect(&server);
            let reader = stream.try_clone().unwrap();
            scope.spawn(move || {
                let batch = request.repeat(100);
                for _ in 0..requests / CONNECTIONS / 100 {
                    stream.write_all(batch.as_bytes()).unwrap();
                }
            });
            scope.spawn(move || {
                let mut reader = std::io::BufReader::new(reader);
                for _ in 0..requests / CONNECTIONS {
                    let mut line = String::new();
                    std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
                    assert!(line.starts_with(status), "{line}");
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(value) =
                            line.to_ascii_lowercase().strip_prefix("content-length:")
                        {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                }
            });
        }
    });
    let seconds = started.elapsed().as_secs() as usize;
    assert_eq!(
        metric(&server, "rebound_privileged_refused_total"),
        requests as f64
    );
    let (ok, log) = server.terminate();
    assert!(ok, "{log}");
    let lines: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("privileged request refused"))
        .collect();
    assert!(
        !lines.is_empty() && lines.len() <= 10 * (seconds + 2),
        "{} lines in {seconds} s",
        lines.len()
    );
    for line in &lines {
        assert!(line.len() <= 1024, "{} bytes: {line}", line.len());
        assert!(!line.contains(long), "{line}");
    }
    assert!(
        log.len() <= log_before + 1024 * 10 * (seconds + 2),
        "{} bytes of log in {seconds} s",
        log.len()
    );
}

/// docs/serve.md "Connections and shutdown": the connection cap is checked against the
/// open-file limit at start. Each connection holds two descriptors; at `ulimit -n 256` (a hard
/// limit the server cannot raise past) the default cap of 1 000 cannot be held, so it is
/// lowered to what fits, with the arithmetic in the log; the connections past it are answered
/// 503, none closed without an answer.
#[test]
fn the_connection_cap_is_fitted_to_the_open_file_limit() {
    const CLIENTS: usize = 200;
    let dir = config();
    let server = Server::start_with_open_files(&dir.path().join("rebound.toml"), 256, &[]);
    let mut streams: Vec<TcpStream> = (0..CLIENTS).map(|_| connect(&server)).collect();
    // Those within the cap hear nothing (idle, kept open); the others are answered 503 at
    // once. Wait until no more answers arrive for a second.
    for stream in &streams {
        stream.set_nonblocking(true).unwrap();
    }
    let answered = |streams: &[TcpStream]| {
        streams
            .iter()
            .filter(|stream| stream.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0))
            .count()
    };
    let (mut seen, mut since) = (0, Instant::now());
    let started = Instant::now();
    while since.elapsed() < Duration::from_secs(1) && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
        let now = answered(&streams);
        if now != seen {
            (seen, since) = (now, Instant::now());
        }
    }
    let mut refused = 0;
    for stream in &mut streams {
        if stream.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
            stream.set_nonblocking(false).unwrap();
            let (status, body) = read_response(stream).expect("a whole answer");
            assert_eq!(status, 503, "{body}");
            refused += 1;
        }
    }
    drop(streams);
    let (ok, log) = server.terminate();
    assert!(ok, "{log}");
    let lowered = log
        .lines()
        .find(|line| line.contains("the connection cap is lowered"))
        .unwrap_or_else(|| panic!("no lowered cap in\n{log}"));
    assert!(
        lowered.contains("((256 (`ulimit -n`)") || lowered.contains("(256 (`ulimit -n`)"),
        "{lowered}"
    );
    assert!(lowered.contains("/ 2 per connection"), "{lowered}");
    let cap: usize = lowered
        .split("max_connections=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{lowered}"));
    assert!(cap > 0 && cap < 128, "{lowered}");
    assert_eq!(refused, CLIENTS - cap, "{lowered}");
}

/// docs/serve.md "Connections and shutdown": the exit never waits on the decision log longer
/// than the drain timeout. The log is a FIFO the test opens and never reads, so its writer
/// blocks once the pipe is full; SIGTERM still ends the server within the drain timeout, and
/// the log says how many lines were not written.
#[test]
fn a_decision_log_that_takes_nothing_does_not_hold_the_exit() {
    let dir = config();
    let toml = dir.path().join("rebound.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str("[decision_log]\nfile = \"decisions.fifo\"\nsample = 1.0\nbuffer = 64\n");
    std::fs::write(&toml, text).unwrap();
    let fifo = dir.path().join("decisions.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // The FIFO's reader: opened (which lets the server's own open go through), never read.
    let reader = std::thread::spawn(move || std::fs::File::open(&fifo).unwrap());
    let server = serve(dir.path(), &["--drain-timeout-ms", "1000"]);
    let _reader = reader.join().unwrap();
    // Lines enough to fill the pipe (64 KiB) and the writer's queue.
    for _ in 0..600 {
        let (status, answer) = server.call("POST", "/v1/decide", STANDARD, None);
        assert_eq!(status, 200, "{answer}");
    }
    let started = Instant::now();
    let (ok, log) = server.terminate();
    assert!(ok, "{log}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(log.contains("lines not written before exit"), "{log}");
}

/// docs/serve.md "Operating it": `/ready` answers 200 while the server takes
/// requests and 503 once a stop signal starts the drain — asked here, pipelined behind a call
/// still running when SIGTERM comes — while `/health` stays the liveness view.
#[test]
fn ready_until_a_stop_signal_starts_the_drain() {
    let dir = config_with_stalling();
    let mut server = serve(dir.path(), &[]);
    let (status, ready) = server.call("GET", "/ready", "", None);
    assert_eq!(
        (status, &ready["ready"]),
        (200, &Value::Bool(true)),
        "{ready}"
    );
    let mut client = connect(&server);
    // A request with room for the policy's whole 5 s deadline: the stop signal has that long
    // to be taken while the call runs, however busy the machine.
    let stalling = (SLOW.replace("\"slow\"", "\"stalling\""))
        .replace("\"request\": {", "\"request\": {\"timeout_ms\": 10000, ");
    let pipelined = format!(
        "{}GET /ready HTTP/1.1\r\nHost: rebound\r\n\r\n",
        decide_request(&stalling)
    );
    client.write_all(pipelined.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    server.signal("TERM");
    let answers: Vec<(u16, String)> = std::iter::from_fn(|| read_response(&mut client)).collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers[0].1.contains("POLICY_FAILED"), "{answers:?}");
    assert_eq!(answers[1].0, 503, "{answers:?}");
    assert!(answers[1].1.contains("draining"), "{answers:?}");
    let (success, log, _) = server.wait_exit(Duration::from_secs(15));
    assert!(success, "{log}");
}

/// docs/serve.md "Connections and shutdown": connections the kernel accepted before the
/// SIGTERM, still waiting in the socket's backlog (the process stopped while fifty clients
/// connected and sent their request), are each taken and answered before the socket closes:
/// none is reset, and the log counts them.
#[test]
fn on_sigterm_connections_still_in_the_backlog_are_answered() {
    let dir = config();
    let mut server = serve(dir.path(), &[]);
    server.signal("STOP");
    let mut clients: Vec<TcpStream> = (0..50).map(|_| connect(&server)).collect();
    for client in &mut clients {
        client
            .write_all(decide_request(STANDARD).as_bytes())
            .unwrap();
    }
    server.signal("TERM");
    server.signal("CONT");
    for (i, client) in clients.iter_mut().enumerate() {
        let answer = read_response(client);
        assert_eq!(
            answer.as_ref().map(|a| a.0),
            Some(200),
            "client {i}: {answer:?}"
        );
    }
    let (success, log, _) = server.wait_exit(Duration::from_secs(15));
    assert!(success, "{log}");
    assert!(log.contains("every request received was answered"), "{log}");
    assert!(log.contains("queued="), "{log}");
}
