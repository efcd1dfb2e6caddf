//! A fault-injecting TCP proxy between the client and memcached: it reads whole binary-protocol
//! frames and, per the faults armed, answers TMPFAIL itself, cuts the connection after the
//! server has applied a request, or holds the response; it counts what it received and what it
//! forwarded, per opcode.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rebound_memcached::protocol::{status, Frame};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does to the next requests.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Faults {
    /// Answer this many requests with TMPFAIL without forwarding them.
    pub tmpfail: u32,
    /// Forward this many requests, let the server answer, then close the client's connection
    /// instead of replying.
    pub cut_after_forwarding: u32,
    /// Forward this many requests and never reply (the connection stays open).
    pub hold_response: u32,
}

#[derive(Debug, Default)]
struct State {
    faults: Faults,
    received: HashMap<u8, u32>,
    forwarded: HashMap<u8, u32>,
}

enum Action {
    TmpFail,
    Cut,
    Hold,
    Forward,
}

/// A running proxy.
#[derive(Clone)]
pub(crate) struct FaultProxy {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl FaultProxy {
    /// Starts a proxy on a free loopback port in front of `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = FaultProxy {
            addr: listener.local_addr().unwrap(),
            state: Arc::default(),
        };
        let state = Arc::clone(&proxy.state);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(serve(client, upstream, Arc::clone(&state)));
            }
        });
        proxy
    }

    /// Arms `faults` for the next requests.
    pub(crate) fn arm(&self, faults: Faults) {
        self.state.lock().unwrap().faults = faults;
    }

    /// Requests with `opcode` the proxy received from clients.
    pub(crate) fn received(&self, opcode: u8) -> u32 {
        self.state
            .lock()
            .unwrap()
            .received
            .get(&opcode)
            .copied()
            .unwrap_or(0)
    }

    /// Requests with `opcode` the proxy forwarded to the server.
    pub(crate) fn forwarded(&self, opcode: u8) -> u32 {
        self.state
            .lock()
            .unwrap()
            .forwarded
            .get(&opcode)
            .copied()
            .unwrap_or(0)
    }
}

fn next_action(state: &Mutex<State>, opcode: u8) -> Action {
    let mut state = state.lock().unwrap();
    *state.received.entry(opcode).or_default() += 1;
    let faults = &mut state.faults;
    let action = if faults.tmpfail > 0 {
        faults.tmpfail -= 1;
        Action::TmpFail
    } else if faults.cut_after_forwarding > 0 {
        faults.cut_after_forwarding -= 1;
        Action::Cut
    } else if faults.hold_response > 0 {
        faults.hold_response -= 1;
        Action::Hold
    } else {
        Action::Forward
    };
    if !matches!(action, Action::TmpFail) {
        *state.forwarded.entry(opcode).or_default() += 1;
    }
    action
}

/// One client connection, with its own connection to the server.
async fn serve(mut client: TcpStream, upstream: SocketAddr, state: Arc<Mutex<State>>) {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    while let Ok(request) = Frame::read(&mut client).await {
        let action = next_action(&state, request.opcode);
        if let Action::TmpFail = action {
            let reply = Frame::status_response(&request, status::TEMPORARY_FAILURE);
            if client.write_all(&reply.encode()).await.is_err() {
                return;
            }
            continue;
        }
        if server.write_all(&request.encode()).await.is_err() {
            return;
        }
        let Ok(response) = Frame::read(&mut server).await else {
            return;
        };
        match action {
            Action::Cut => return, // both connections close; the server applied the request
            Action::Hold => {
                // Keep the client's connection open and silent until the client gives up.
                let mut buf = [0u8; 1];
                let _ = tokio::io::AsyncReadExt::read(&mut client, &mut buf).await;
                return;
            }
            Action::Forward | Action::TmpFail => {
                if client.write_all(&response.encode()).await.is_err() {
                    return;
                }
            }
        }
    }
}
