module github.com/fullpipe/fullpipe

go 1.26.8

// Each dependency, and why (see also README, Dependencies):
require (
	github.com/chromedp/chromedp v0.23.0 // tests and bench/webrender only (internal/testkit/chrome): drives headless Chromium over the DevTools protocol, over a pipe (so a browser in a lab namespace needs no port); the maintained Go CDP client, not linked into the binary
	github.com/invopop/jsonschema v0.14.0 // schemagen only (not in the binary): JSON Schema 2020-12 reflected from the result types, honouring json tags and omitempty, with descriptions from Go comments and Mapper/Namer hooks for our enums; the common, maintained choice
	github.com/jackc/pgx/v5 v5.12.0 // store: the maintained PostgreSQL driver, used through its database/sql adapter (stdlib) so SQLite and PostgreSQL share one code path; its PgError codes tell serialization failures and deadlocks to retry
	github.com/netresearch/go-cron v0.9.1 // schedule: parses 5-field cron and @hourly-style descriptors and finds the next time; the maintained fork of robfig/cron (unmaintained since 2020), no dependencies, fuzzed; used as a parser only, with its options named (DowOrDom: the standard day rule)
	github.com/pressly/goose/v3 v3.29.0 // store: migrations from an embed.FS, one set of SQL files for both dialects (sqlite3, postgres) and Go ones beside them, a version table, and a Provider API without global state
	github.com/prometheus/client_golang v1.25.0 // controller: /metrics in the Prometheus exposition format (registry, collectors, promhttp); the reference client, the one Prometheus itself uses
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // tests only (resulttest): a full draft 2020-12 validator, formats included, that passes the official JSON-Schema-Test-Suite; needs only golang.org/x/text
	github.com/spf13/cobra v1.10.2 // CLI: nested commands (lab up, sweep window) over the pflag flags, and shell completion (bash, zsh, fish, powershell)
	github.com/spf13/pflag v1.1.0 // GNU-style flags (-P 4 / --streams 4) that the standard flag package lacks
	github.com/vishvananda/netlink v1.3.1 // lab: addresses, links and routes inside namespaces over rtnetlink
	github.com/vishvananda/netns v0.0.5 // lab: named network namespaces, compatible with `ip netns`
	go.yaml.in/yaml/v4 v4.0.0-rc.2 // tests only (controller): reads docs/openapi.yaml to check the routes and answers against it; already in the graph as invopop/jsonschema's
	golang.org/x/net v0.61.0 // flow, serve: sendmmsg and recvmmsg (ipv4/ipv6 PacketConn WriteBatch, ReadBatch), which x/sys/unix does not wrap, for 1 M datagrams/s of 64-byte frames from one core; icmpping: ICMP echo and its reply marshalled and parsed rather than by hand; tests (report): an HTML tokenizer, to check each report page is well formed; already in the graph as wireguard's (raised to goose's minimum)
	golang.org/x/sys v0.49.0 // TCP_INFO, SIOCOUTQ, socket options and TUN ioctls not in syscall
	golang.zx2c4.com/wireguard v0.0.0-20260522210424-ecfc5a8d5446 // lab: TUN with virtio-net offloads (GSO split, GRO coalesce) for a fast forwarder
	gonum.org/v1/gonum v0.17.0 // ber: the chi-square distribution (quantile for the profile-likelihood intervals, survival for the fit and homogeneity tests) and, in tests, exact binomial draws from a seeded source; Gonum is the maintained numerical library for Go, pure Go, only stat/distuv and what it needs are linked
	modernc.org/sqlite v1.62.0 // store: SQLite without cgo (CGO_ENABLED=0), SQLite's C translated to Go; chosen over ncruces/go-sqlite3 (SQLite as WASM under wazero: compiled to native only on amd64/arm64, an interpreter elsewhere, and a runtime inside the binary) for its long use behind goose and golang-migrate, plain native code on every GOARCH Go supports, and _txlock=immediate in the DSN
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect; cobra's, built on Windows only
	github.com/pb33f/ordered-map/v2 v2.3.1 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.zx2c4.com/wintun v0.0.0-20230126152724-0fa3db229ce2 // indirect
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/mfridman/interpolate v0.0.2 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/sethvargo/go-retry v0.5.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)
