# stub until the capture lands
set(BOUNDARY_RSQRT_TABLE_SOURCE "")
