//! A scripted gRPC server for the tonic layer's tests and example: `shop.Inventory`, every
//! method answered from a list (OK once it runs out), the calls it saw recorded, behind a TCP
//! relay whose connections can be cut; and a bare HTTP/2 server that refuses streams. Messages are raw bytes (no protobuf needed to show what
//! travels around them).
#![allow(dead_code)] // the tests and the example use different parts

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, BufMut};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};

/// Messages as raw bytes: no protobuf needed to test what travels around them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut item = vec![0; src.remaining()];
        src.copy_to_slice(&mut item);
        Ok(Some(item))
    }
}

/// What the server answers to one call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Answer {
    /// OK, echoing the request.
    Ok,
    /// This status, with this `grpc-retry-pushback-ms` if any.
    Fail(Code, Option<&'static str>),
    /// Tell the test the call arrived, then never answer (the test cuts the relay).
    Hang,
    /// Response headers, then no message and this status in the trailers: the call was
    /// committed before it failed (gRFC A6 "When Retries are Valid").
    FailAfterHeaders(Code),
}

/// The server's script and what it saw: each call's method and headers.
#[derive(Default)]
pub(crate) struct Script {
    answers: Mutex<VecDeque<Answer>>,
    seen: Mutex<Vec<(String, http::HeaderMap)>>,
    /// Notified when a call answered `Hang` arrives.
    pub(crate) arrived: Notify,
}

impl Script {
    /// A server answering `answers` in turn.
    pub(crate) fn new(answers: impl IntoIterator<Item = Answer>) -> Arc<Self> {
        Arc::new(Script {
            answers: Mutex::new(answers.into_iter().collect()),
            ..Script::default()
        })
    }

    /// Each call it saw: its method and headers.
    pub(crate) fn seen(&self) -> Vec<(String, http::HeaderMap)> {
        self.seen.lock().unwrap().clone()
    }
}

/// `shop.Inventory`, answering every method from the script (OK once it runs out).
#[derive(Clone)]
struct Inventory(Arc<Script>);

impl tonic::server::NamedService for Inventory {
    const NAME: &'static str = "shop.Inventory";
}

impl tower_service::Service<http::Request<tonic::body::Body>> for Inventory {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let script = Arc::clone(&self.0);
        Box::pin(async move {
            let method = req.uri().path().to_owned();
            script
                .seen
                .lock()
                .unwrap()
                .push((method, req.headers().clone()));
            let answer = script
                .answers
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(Answer::Ok);
            if let Answer::FailAfterHeaders(code) = answer {
                return Ok(headers_then_trailers(code));
            }
            let handler = Handler(answer, Arc::clone(&script));
            Ok(tonic::server::Grpc::new(Raw).unary(handler, req).await)
        })
    }
}

/// An answer whose headers go first, then trailers carrying `code` and no message.
fn headers_then_trailers(code: Code) -> http::Response<tonic::body::Body> {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", i32::from(code).into());
    let frames = [Ok::<_, Infallible>(
        http_body::Frame::<bytes::Bytes>::trailers(trailers),
    )];
    let body = http_body_util::StreamBody::new(tokio_stream::iter(frames));
    http::Response::builder()
        .header("content-type", "application/grpc")
        .body(tonic::body::Body::new(body))
        .unwrap()
}

/// A bare HTTP/2 server that resets its first `refusals` streams with `REFUSED_STREAM` (they
/// reach its transport, never an application: gRFC A6 "Transparent Retries") and answers every
/// later one with `code`, Trailers-Only. Its address, and how many streams it saw.
pub(crate) async fn start_refusing(refusals: usize, code: Code) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            let seen = Arc::clone(&counted);
            tokio::spawn(async move {
                let mut connection = h2::server::handshake(socket).await.unwrap();
                while let Some(Ok((_, mut respond))) = connection.accept().await {
                    if seen.fetch_add(1, Ordering::SeqCst) < refusals {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    let answer = http::Response::builder()
                        .header("content-type", "application/grpc")
                        .header("grpc-status", i32::from(code))
                        .body(())
                        .unwrap();
                    let _ = respond.send_response(answer, true);
                }
            });
        }
    });
    (address, seen)
}

struct Handler(Answer, Arc<Script>);

impl tonic::server::UnaryService<Vec<u8>> for Handler {
    type Response = Vec<u8>;
    type Future = Pin<Box<dyn Future<Output = Result<tonic::Response<Vec<u8>>, Status>> + Send>>;

    fn call(&mut self, request: tonic::Request<Vec<u8>>) -> Self::Future {
        let answer = self.0;
        let script = Arc::clone(&self.1);
        Box::pin(async move {
            match answer {
                Answer::Ok => Ok(tonic::Response::new(request.into_inner())),
                Answer::Fail(code, pushback) => {
                    let mut metadata = tonic::metadata::MetadataMap::new();
                    if let Some(ms) = pushback {
                        metadata.insert("grpc-retry-pushback-ms", ms.parse().unwrap());
                    }
                    Err(Status::with_metadata(code, "scripted", metadata))
                }
                Answer::Hang => {
                    script.arrived.notify_one();
                    std::future::pending().await
                }
                Answer::FailAfterHeaders(_) => unreachable!("answered without a handler"),
            }
        })
    }
}

/// The server, and a relay in front of it whose connections the test can cut.
pub(crate) struct Running {
    pub(crate) script: Arc<Script>,
    /// Where clients connect.
    pub(crate) relay: SocketAddr,
    /// Notified to cut every relayed connection.
    pub(crate) cut: Arc<Notify>,
}

/// Starts the server and its relay.
pub(crate) async fn start(script: Arc<Script>) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let service = Inventory(Arc::clone(&script));
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    let relay_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay = relay_listener.local_addr().unwrap();
    let cut = Arc::new(Notify::new());
    let cut_all = Arc::clone(&cut);
    tokio::spawn(async move {
        loop {
            let (mut client, _) = relay_listener.accept().await.unwrap();
            let cut = Arc::clone(&cut_all);
            tokio::spawn(async move {
                let mut upstream = TcpStream::connect(server).await.unwrap();
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
                    _ = cut.notified() => {}
                }
            });
        }
    });
    Running { script, relay, cut }
}
