"""Generator: model file -> validated model -> topology -> kinematics -> equation form -> IR -> source."""
