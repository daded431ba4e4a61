// Package exitcode gives hubd's commands one way to say how they end: an
// error may carry the process exit code, and Report prints an error and
// turns it into that code. The codes: 0 done; 1 failed, or refused by the
// hub (any error that carries no code); 2 a mistake on the command line or
// in its input (Usage); 3 the hub could not be reached (Unreachable).
package exitcode
