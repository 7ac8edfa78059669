-- Run once by the postgres image on an empty volume: Temporal's persistence
-- and visibility, the gateway's truth, the simulator's data, one server.
CREATE DATABASE temporal;
CREATE DATABASE temporal_visibility;
CREATE DATABASE oncegate;
CREATE DATABASE oncegate_sim;
