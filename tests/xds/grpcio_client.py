"""grpcio's own xDS client, for the cross-check of cli/tests/xds_source.rs: a channel to
`xds:///shop` whose bootstrap names the management server, kept trying to connect (which keeps
its xDS client subscribed) until this process is killed. The management server's log shows what
it ACKs and NACKs.

Usage: grpcio_client.py PORT
"""

import json
import os
import sys
import time

port = sys.argv[1]
os.environ["GRPC_XDS_BOOTSTRAP_CONFIG"] = json.dumps({
    "xds_servers": [{
        "server_uri": f"127.0.0.1:{port}",
        "channel_creds": [{"type": "insecure"}],
        "server_features": ["xds_v3"],
    }],
    "node": {"id": "grpcio-check"},
})

import grpc  # noqa: E402  (after the bootstrap: the xDS client reads it when it starts)

channel = grpc.insecure_channel("xds:///shop")
while True:
    try:
        grpc.channel_ready_future(channel).result(timeout=1)
    except grpc.FutureTimeoutError:
        pass
    time.sleep(0.2)
