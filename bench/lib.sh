# Shared by the bench scripts (sourced, not run).

# free_port prints a TCP port on 127.0.0.1 free a moment ago.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_controller STATE: waits until a controller started with
# --state-dir STATE has written its admin token and certificate (10 s at
# most), then half a second for its listener.
wait_controller() {
	for _ in $(seq 100); do [ -s "$1/admin.token" ] && [ -s "$1/tls.crt" ] && break; sleep 0.1; done
	sleep 0.5
}
