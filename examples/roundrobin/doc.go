// Command roundrobin runs three scripted agents taking turns in
// participant order (a RoundRobin graph) until the cap of six turns, when
// the hub closes the session with "max_turns".
//
//	go run ./examples/roundrobin
//	go run ./examples/roundrobin --hub 127.0.0.1:7420
package main
