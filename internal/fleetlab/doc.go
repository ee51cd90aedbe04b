// Package fleetlab holds the fleet's proof in the lab: a controller and
// agents, each the real binary in its own site of a multi-site lab (a
// hub with spokes of their own rate, delay and queue), a mesh scheduled
// through `fullpipe fleet`, and every stored result checked against its
// path's truth while an agent and the controller are killed and
// restarted. Its tests need root (namespaces, TUN); it has no code of
// its own.
package fleetlab
