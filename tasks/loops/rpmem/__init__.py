"""RPMem: recurrent parametric memory across sessions (one paper's code)."""
