"""A dataset mirror on loopback for the download tests: serves the files of a folder as
<base>/<file name> (GET and HEAD, with "Range: bytes=N-" answered 206 as S3 does), logs one line
per request ("GET /train-images-idx3-ubyte.gz range=-") and writes the port it listens on.
DELAY (seconds, default 0) holds each GET before answering, so that concurrent clients overlap.

usage: mirror_server.py FOLDER PORT_FILE LOG_FILE [DELAY]
"""
import http.server
import os
import re
import sys
import time


class Mirror(http.server.BaseHTTPRequestHandler):
    folder = "."
    log_file = None
    delay = 0.0

    def do_HEAD(self):
        self.serve(body=False)

    def do_GET(self):
        self.serve(body=True)

    def serve(self, body):
        self.log_file.write(f"{self.command} {self.path} range={self.headers.get('Range', '-')}\n")
        self.log_file.flush()
        name = self.path.lstrip("/")
        path = os.path.join(self.folder, name)
        if "/" in name or not os.path.isfile(path):
            self.send_error(404)
            return
        with open(path, "rb") as f:
            data = f.read()
        start = 0
        m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if m and int(m.group(1)) < len(data):
            start = int(m.group(1))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if body:
            time.sleep(self.delay)
            self.wfile.write(data[start:])

    def log_message(self, *args):
        pass


def main():
    folder, port_file, log_file = sys.argv[1:4]
    Mirror.folder = folder
    Mirror.log_file = open(log_file, "a")
    Mirror.delay = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Mirror)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
