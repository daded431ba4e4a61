// Package bench is hubd's laboratory, kept out of the product: the tools
// that measure the code and the hub, and the script that produces every
// figure docs/PERFORMANCE.md publishes, each with the one command that
// reproduces it (figures.sh). floor holds the floors the hub is measured
// against, table runs hubload's workloads (cmd/hubload/load) between them
// and prints the targets' table, shape measures how the packages hold
// together. It is a module of its own, so that what it needs (the Go
// analysis packages, the floors' servers) never enters the server's or a
// client's build.
package bench
