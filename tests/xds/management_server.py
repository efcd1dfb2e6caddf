"""An xDS management server for tests: the Aggregated Discovery Service, state of the world, on
the gRPC project's own Envoy API packages (grpcio, xds-protos).

It serves the route configurations and clusters of a snapshot file the test writes and changes:
{"version": "1", "route_configurations": [<RouteConfiguration as proto3 JSON>, ...],
"clusters": [<Cluster as proto3 JSON>, ...]} (without "clusters", cluster subscriptions are not
answered). A
snapshot with "flood": N sends N versions more at once after it (versions "V.1" to "V.N", each
with the first route's num_retries cycling from 1 to 4), without waiting for their answers. Every
stream subscribed to route configurations gets the current snapshot's (those it names) when it
subscribes and whenever the snapshot changes, each response with a new nonce; likewise every
stream subscribed to clusters gets those it names, all of them in each response (state of the
world). Every request it
receives is appended to a log (JSON lines: node id, type, version_info, response_nonce,
error_detail, and whether it ACKs or NACKs a response), so the test reads the ACKs and NACKs.
A listener asked for (LDS, as grpcio's own xDS client asks for its target) is an API listener
whose routes are the snapshot's first route configuration, over ADS.

Usage: management_server.py SNAPSHOT.json LOG.jsonl PORT_FILE [PORT [CERT KEY [CLIENT_CA]]]
Writes the port it listens on to PORT_FILE (PORT 0 or absent: any free port). With CERT and KEY
(PEM) it serves TLS; with CLIENT_CA too it requires a client certificate that CA signed.
"""

import json
import os
import queue
import sys
import threading
import time
from concurrent import futures

import grpc
from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.listener.v3 import listener_pb2
from envoy.config.route.v3 import route_pb2
from envoy.extensions.filters.http.router.v3 import router_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.service.discovery.v3 import ads_pb2_grpc, discovery_pb2
from google.protobuf import any_pb2, json_format

RDS = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
LDS = "type.googleapis.com/envoy.config.listener.v3.Listener"
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"


def listener(name, route_configuration):
    """A gRPC client's listener: its routes from RDS over ADS (for grpcio's own xDS client)."""
    manager = hcm_pb2.HttpConnectionManager()
    manager.rds.route_config_name = route_configuration
    manager.rds.config_source.ads.SetInParent()
    router = manager.http_filters.add()
    router.name = "router"
    router.typed_config.Pack(router_pb2.Router())
    result = listener_pb2.Listener(name=name)
    result.api_listener.api_listener.Pack(manager)
    return result


class Snapshots:
    """The snapshot file, read again when it changes."""

    def __init__(self, path):
        self.path = path
        self.mtime = None
        self.version = None
        self.routes = {}
        self.clusters = None
        self.flood = 0
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def poll(self):
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except FileNotFoundError:
            return
        if mtime == self.mtime:
            return
        with open(self.path) as f:
            snapshot = json.load(f)
        routes = {}
        for rc in snapshot["route_configurations"]:
            message = json_format.ParseDict(rc, route_pb2.RouteConfiguration())
            routes[message.name] = message
        clusters = None
        if "clusters" in snapshot:
            clusters = {}
            for c in snapshot["clusters"]:
                message = json_format.ParseDict(c, cluster_pb2.Cluster())
                clusters[message.name] = message
        with self.lock:
            self.mtime = mtime
            self.version = snapshot["version"]
            self.routes = routes
            self.clusters = clusters
            self.flood = snapshot.get("flood", 0)
            self.changed.notify_all()

    def current(self, type_url=RDS):
        """The version and the resources of `type_url` by name (None: not served)."""
        with self.lock:
            if type_url == CDS:
                return self.version, None if self.clusters is None else dict(self.clusters)
            return self.version, dict(self.routes)

    def flood_versions(self):
        """The versions a flood sends after the current one."""
        with self.lock:
            version, routes, n = self.version, self.routes, self.flood
        for i in range(1, n + 1):
            changed = {}
            for name, message in routes.items():
                copy = route_pb2.RouteConfiguration()
                copy.CopyFrom(message)
                policy = copy.virtual_hosts[0].routes[0].route.retry_policy
                policy.num_retries.value = 1 + i % 4
                changed[name] = copy
            yield f"{version}.{i}", changed


class Ads(ads_pb2_grpc.AggregatedDiscoveryServiceServicer):
    def __init__(self, snapshots, log_path):
        self.snapshots = snapshots
        self.log_path = log_path
        self.log_lock = threading.Lock()
        self.nonce = 0
        self.nonce_lock = threading.Lock()

    def log(self, entry):
        with self.log_lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()

    def response(self, names, version, resources_by_name, type_url=RDS):
        with self.nonce_lock:
            self.nonce += 1
            nonce = str(self.nonce)
        resources = []
        for name in names or resources_by_name.keys():
            if name in resources_by_name:
                packed = any_pb2.Any()
                packed.Pack(resources_by_name[name])
                resources.append(packed)
        return discovery_pb2.DiscoveryResponse(
            version_info=version, resources=resources, type_url=type_url, nonce=nonce
        )

    def StreamAggregatedResources(self, request_iterator, context):
        out = queue.Queue()
        # Per type subscribed to: the names asked for and the version last sent.
        subscriptions = {RDS: {"names": None, "sent": None}, CDS: {"names": None, "sent": None}}
        state = {"node": ""}
        lock = threading.Lock()

        def send_if_changed():
            send_clusters_if_changed()
            version, routes = self.snapshots.current()
            sub = subscriptions[RDS]
            with lock:
                if sub["names"] is None or version is None or version == sub["sent"]:
                    return
                response = self.response(sub["names"], version, routes)
                sub["sent"] = version
            self.log({"sent": {"version": version, "nonce": response.nonce}})
            out.put(response)
            for flood_version, routes in self.snapshots.flood_versions():
                with lock:
                    response = self.response(sub["names"], flood_version, routes)
                out.put(response)

        def send_clusters_if_changed():
            version, clusters = self.snapshots.current(CDS)
            sub = subscriptions[CDS]
            with lock:
                if sub["names"] is None or clusters is None or version == sub["sent"]:
                    return
                response = self.response(sub["names"], version, clusters, CDS)
                sub["sent"] = version
            self.log({"sent": {"type_url": CDS, "version": version, "nonce": response.nonce}})
            out.put(response)

        def read():
            try:
                for request in request_iterator:
                    # The node comes with a stream's first request only.
                    state["node"] = request.node.id or state["node"]
                    entry = {
                        "node": state["node"],
                        "type_url": request.type_url,
                        "version_info": request.version_info,
                        "response_nonce": request.response_nonce,
                        "resource_names": list(request.resource_names),
                        "error_detail": request.error_detail.message if request.HasField("error_detail") else None,
                    }
                    if request.response_nonce:
                        entry["answer"] = "nack" if request.HasField("error_detail") else "ack"
                    self.log(entry)
                    if request.type_url == LDS and not request.response_nonce:
                        version, routes = self.snapshots.current()
                        first = next(iter(routes), "")
                        response = discovery_pb2.DiscoveryResponse(version_info="listeners", type_url=LDS, nonce="l")
                        for name in request.resource_names:
                            response.resources.add().Pack(listener(name, first))
                        out.put(response)
                    names = list(request.resource_names)
                    sub = subscriptions.get(request.type_url)
                    # A first request, or one that changes what it subscribes to.
                    if sub is not None and (not request.response_nonce or names != sub["names"]):
                        with lock:
                            sub["names"] = names
                            sub["sent"] = None
                        send_if_changed()
            except grpc.RpcError:
                pass
            out.put(None)

        threading.Thread(target=read, daemon=True).start()

        def watch():
            while context.is_active():
                with self.snapshots.lock:
                    self.snapshots.changed.wait(timeout=0.2)
                send_if_changed()

        threading.Thread(target=watch, daemon=True).start()
        while context.is_active():
            try:
                response = out.get(timeout=0.2)
            except queue.Empty:
                continue
            if response is None:
                return
            yield response


def main():
    snapshot, log_path, port_file = sys.argv[1:4]
    port = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    tls = sys.argv[5:8]
    snapshots = Snapshots(snapshot)
    snapshots.poll()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    ads_pb2_grpc.add_AggregatedDiscoveryServiceServicer_to_server(Ads(snapshots, log_path), server)
    if tls:
        read = lambda path: open(path, "rb").read()
        client_ca = read(tls[2]) if len(tls) > 2 else None
        credentials = grpc.ssl_server_credentials(
            [(read(tls[1]), read(tls[0]))],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )
        bound = server.add_secure_port(f"127.0.0.1:{port}", credentials)
    else:
        bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    with open(port_file + ".tmp", "w") as f:
        f.write(str(bound))
    os.replace(port_file + ".tmp", port_file)
    while True:
        time.sleep(0.05)
        snapshots.poll()


if __name__ == "__main__":
    main()
