"""SnapDeals (EmptySectorUpdate): the update encoding, its vanilla proofs and their wire form."""
