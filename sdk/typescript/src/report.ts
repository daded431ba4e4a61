// Reporting what failed in a callback of the application (a handler, a
// hook, a delivery callback) without failing again while reporting it.

/**
 * What err says, for a log line: String(err), or, for a value with no
 * string form (an object without a prototype, a toString that throws), a
 * description of what it is. Never throws.
 */
export function describe(err: unknown): string {
  try {
    return String(err);
  } catch {
    try {
      return `${Object.prototype.toString.call(err)} (no string form)`;
    } catch {
      return "a value with no string form";
    }
  }
}

/**
 * The client's log: log (nothing when unset), made safe to call from the
 * SDK's own error paths: a log function that throws loses that line and
 * nothing else.
 */
export function guardLog(log?: (line: string) => void): (line: string) => void {
  if (!log) {
    return () => {};
  }
  return (line) => {
    try {
      log(line);
    } catch {
      // Nowhere left to report it: the line is dropped, the caller goes on.
    }
  };
}
