//! Points within a great-circle radius. Points are kept sorted by latitude, so a search reads
//! only the band of latitudes the circle spans and measures each point there exactly
//! (haversine); longitudes wrap at the antimeridian.

/// The mean Earth radius, in kilometres.
const EARTH_KM: f64 = 6_371.008_8;

/// The great-circle distance in kilometres between two points given in degrees.
pub fn distance_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_KM * a.sqrt().min(1.0).asin()
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub latitude: f64,
    pub longitude: f64,
    /// What the point belongs to (the caller's numbering).
    pub owner: u32,
    /// Which of its owner's points it is.
    pub index: u32,
}

pub struct GeoIndex {
    /// By latitude.
    points: Vec<Point>,
}

impl GeoIndex {
    pub fn build(mut points: Vec<Point>) -> GeoIndex {
        points.sort_by(|a, b| a.latitude.total_cmp(&b.latitude));
        GeoIndex { points }
    }

    pub fn memory(&self) -> usize {
        self.points.capacity() * std::mem::size_of::<Point>()
    }

    /// Every point within `radius_km` of (`latitude`, `longitude`), with its distance.
    pub fn within(&self, latitude: f64, longitude: f64, radius_km: f64) -> Vec<(Point, f64)> {
        // A degree of latitude is the same length everywhere: the band the circle can reach.
        let reach = (radius_km / EARTH_KM).to_degrees();
        let (low, high) = (latitude - reach, latitude + reach);
        // And the band of longitudes at the circle's widest latitude, unless it nears a pole
        // or wraps the whole Earth.
        let widest = latitude.abs() + reach;
        let lon_reach = if widest < 89.0 {
            reach / widest.to_radians().cos()
        } else {
            f64::INFINITY
        };
        let start = self.points.partition_point(|p| p.latitude < low);
        self.points[start..]
            .iter()
            .take_while(|p| p.latitude <= high)
            .filter(|p| {
                let apart = (p.longitude - longitude).abs();
                apart.min(360.0 - apart) <= lon_reach
            })
            .filter_map(|p| {
                let d = distance_km(latitude, longitude, p.latitude, p.longitude);
                (d <= radius_km).then_some((*p, d))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(latitude: f64, longitude: f64, owner: u32) -> Point {
        Point {
            latitude,
            longitude,
            owner,
            index: 0,
        }
    }

    #[test]
    fn distances_are_great_circle() {
        // Cape Town to Johannesburg: about 1,260 km.
        let d = distance_km(-33.9249, 18.4241, -26.2041, 28.0473);
        assert!((d - 1_262.0).abs() < 5.0, "{d}");
        assert_eq!(distance_km(10.0, 20.0, 10.0, 20.0), 0.0);
    }

    #[test]
    fn points_just_inside_count_and_just_outside_do_not() {
        // 0.1 degrees of latitude is 11.12 km.
        let index = GeoIndex::build(vec![
            point(0.1, 0.0, 1),
            point(0.09, 0.0, 2),
            point(-0.05, 0.0, 3),
        ]);
        let found: Vec<u32> = index
            .within(0.0, 0.0, 10.0)
            .iter()
            .map(|(p, _)| p.owner)
            .collect();
        assert_eq!(found, [3]);
        let found: Vec<u32> = index
            .within(0.0, 0.0, 11.2)
            .iter()
            .map(|(p, _)| p.owner)
            .collect();
        assert_eq!(found, [3, 2, 1]);
    }

    #[test]
    fn the_antimeridian_is_no_edge() {
        // Fiji's two sides: 179.9 E and 179.9 W are 22 km apart at 17 S.
        let index = GeoIndex::build(vec![point(-17.0, -179.9, 7)]);
        let found = index.within(-17.0, 179.9, 25.0);
        assert_eq!(found.len(), 1);
        assert!((found[0].1 - 21.3).abs() < 0.5, "{}", found[0].1);
    }
}
