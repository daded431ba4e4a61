// Command hubd is the hubd session hub and its tools.
//
//	hubd graph validate [--participants a,b,c] FILE   check a workflow graph; exit 2 names the offending node
//	hubd graph render FILE                            print the graph as a Mermaid flowchart
//	hubd graph simulate --graph FILE --participants a,b,c [--creator a] [--context JSON] [--max-handoffs N]
//	                                                  dry-run a workflow session: JSON envelopes on stdin,
//	                                                  one JSON result per line on stdout
//
// main is tiny: everything happens in run(ctx, args, stdin, stdout, stderr),
// which the tests call directly.
package main
