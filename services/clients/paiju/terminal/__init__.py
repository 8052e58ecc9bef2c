"""Terminal front-ends: a narrator for 砸六家 events and a bot match shown round by round."""
