"""cover: CoVer on codemidas — a code role (a categorical policy over mutation operators
applied to the reference) and a test role (a categorical policy over input generators)
trained with REINFORCE; tests are rewarded for separating better programs from worse."""
