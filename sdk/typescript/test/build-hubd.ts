// Builds hubd once before the tests (npm test's pretest), unless $HUBD_BIN
// names a binary to use.

import { join } from "node:path";

import { buildHubd, pkgDir } from "./hub.js";

if (!process.env.HUBD_BIN) {
  buildHubd(join(pkgDir, "build", "hubd"));
}
