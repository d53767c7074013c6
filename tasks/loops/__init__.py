"""One package per loop, for what belongs to that paper alone. A loop's package is its
author's to change; loop packages never import each other (an import-linter contract):
what two loops share lives in a family package (`tasks.search`, `tasks.harness_loops`,
`tasks.training`) or in the generic `tasks.stages`, `tasks.gate`, `tasks.proposers`."""
